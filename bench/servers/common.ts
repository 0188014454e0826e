/**
 * Shared by every bench server process: listen on 127.0.0.1 (a free port), tell the orchestrator the port over
 * IPC, answer memory probes, and exit with the orchestrator. Servers are started by bench/run.ts with
 * `node --expose-gc --import tsx <file>` (under `taskset` where it exists); they never run on their own.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PerformanceObserver, constants } from 'node:perf_hooks';

export type ServerMessage =
  | { type: 'ready'; port: number; pid: number }
  | {
      type: 'memory';
      id: number;
      rss: number;
      heapUsed: number;
      external: number;
      arrayBuffers: number;
      /** Milliseconds spent in GC pauses since the server started, all kinds and major (mark-compact) only. */
      gcMs: number;
      majorGcMs: number;
    }
  /** The event loop's delay during a window (wall-clock ms): 99th percentile and worst. */
  | { type: 'loop'; id: number; p99Ms: number; maxMs: number; samples: number }
  /** CPU microseconds of one ID-token signature, made as this server makes them (NaN: it signs none). */
  | { type: 'signature'; id: number; us: number };

export type OrchestratorMessage =
  | { type: 'memory'; id: number; gc: boolean }
  | { type: 'loop'; id: number; from: number; to: number }
  | { type: 'signature'; id: number }
  | { type: 'stop' };

/** Fixed credentials shared by the servers and the load generator (loopback only, never a real secret). */
export const BENCH_CLIENT_ID = 'bench-client';
export const BENCH_CLIENT_SECRET = 'Zk3q9V1mXcB7tR2pLw8sN4yH6dJ0aGfE';
export const BENCH_PHONE = '+34600000001';
export const ISSUER_PATH = '/apigateway';
export const BENCH_REDIRECT_URI = 'https://bench.example/cb';
/** Workload 2: the device's address on the mobile network, sent by the load generator as X-Forwarded-For. */
export const BENCH_DEVICE_IP = '10.20.0.1';
export const BENCH_MOBILE_RANGE = '10.20.0.0/16';

function send(message: ServerMessage): void {
  process.send?.(message);
}

/** GC pause time, so a round can say how much of it went to collecting (it varies with the heap's size). */
const gcTime = { all: 0, major: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcTime.all += entry.duration;
    const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) gcTime.major += entry.duration;
  }
}).observe({ entryTypes: ['gc'] });

/**
 * Event-loop delay: a 10 ms timer notes how late it fires, with the wall-clock time, so a window can ask for
 * its own delays afterwards. A request whose handling holds the loop shows up as a delay as long as the hold,
 * also when the hold delayed the asking (a probe sent at a window's edge would be answered only after it).
 * Only in the servers of suites that report it (BENCH_LOOP_PROBE=1, the hostile suite): a server that idles
 * beside the measured one (the pending one) must not wake its core a hundred times a second.
 */
const TICK_MS = 10;
const LOOP_SAMPLES = 12_000; // two minutes of ticks
const loopAt = new Float64Array(LOOP_SAMPLES);
const loopLate = new Float64Array(LOOP_SAMPLES);
let loopNext = 0;
let lastTick = Date.now();
const tick = (): void => {
  const now = Date.now();
  loopAt[loopNext % LOOP_SAMPLES] = now;
  loopLate[loopNext % LOOP_SAMPLES] = Math.max(0, now - lastTick - TICK_MS);
  loopNext++;
  lastTick = now;
  setTimeout(tick, TICK_MS).unref();
};
if (process.env.BENCH_LOOP_PROBE === '1') setTimeout(tick, TICK_MS).unref();

/** Delays of the ticks that fell in [from, to] (a hold still going on now counts too). */
function loopDelay(from: number, to: number): { p99Ms: number; maxMs: number; samples: number } {
  const late: number[] = [];
  for (let i = Math.max(0, loopNext - LOOP_SAMPLES); i < loopNext; i++) {
    const at = loopAt[i % LOOP_SAMPLES]!;
    // A late tick covers the hold before it: it belongs to the window when the hold overlaps it.
    if (at >= from && at - loopLate[i % LOOP_SAMPLES]! - TICK_MS <= to) late.push(loopLate[i % LOOP_SAMPLES]!);
  }
  const ongoing = Date.now() - lastTick - TICK_MS;
  if (ongoing > 0 && lastTick <= to) late.push(ongoing);
  late.sort((a, b) => a - b);
  const p99 = late.length ? late[Math.min(late.length - 1, Math.floor(late.length * 0.99))]! : 0;
  return { p99Ms: p99, maxMs: late.length ? late[late.length - 1]! : 0, samples: late.length };
}

/**
 * `signature`: the ID-token rows' probe of one signature's CPU (bench/servers/signature-cost.ts), asked for after a
 * window, while the server is idle.
 */
export function serve(server: Server, signature?: () => Promise<number>): void {
  // Longer than any pause between rounds, so the load generator's keep-alive connections survive them.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 125_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    send({ type: 'ready', port, pid: process.pid });
  });
  process.on('message', (message: OrchestratorMessage) => {
    if (message.type === 'memory') {
      // --expose-gc: a full collection first, so heapUsed counts live objects only.
      const gc = (globalThis as { gc?: () => void }).gc;
      if (message.gc && gc) gc();
      const usage = process.memoryUsage();
      send({
        type: 'memory',
        id: message.id,
        rss: usage.rss,
        heapUsed: usage.heapUsed,
        external: usage.external,
        arrayBuffers: usage.arrayBuffers,
        gcMs: gcTime.all,
        majorGcMs: gcTime.major,
      });
    } else if (message.type === 'loop') {
      send({ type: 'loop', id: message.id, ...loopDelay(message.from, message.to) });
    } else if (message.type === 'signature') {
      const reply = (us: number) => send({ type: 'signature', id: message.id, us });
      if (signature) signature().then(reply, () => reply(Number.NaN));
      else reply(Number.NaN);
    } else if (message.type === 'stop') {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
  // The orchestrator went away (finished, crashed or was interrupted): never linger.
  process.on('disconnect', () => process.exit(0));
}

/** Reports the first few internal errors only: a broken server shows up as failed operations in the table. */
export function quietOnError(label: string): (error: unknown) => void {
  let reported = 0;
  return (error) => {
    if (reported++ < 5)
      process.stderr.write(`${label}: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
  };
}
