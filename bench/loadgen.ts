/**
 * The load generator process (started by bench/run.ts, pinned to its own core). It keeps a set of keep-alive
 * connections per server, runs one round when asked (warm-up, then the measured window), and samples CPU
 * and memory itself at the window's edges, so the numbers and the window are the same instant.
 */
import type { RecordableHistogram } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Connection,
  OperationFailed,
  Recorder,
  WORKLOADS,
  pendingRequest,
  type ServerParams,
  type WorkloadId,
} from './workloads.js';
import { cpuBetween, cpuSnapshot, processRss, type CpuUse } from './proc.js';

export interface RunRequest {
  type: 'run';
  id: number;
  origin: string;
  workload: WorkloadId;
  params: ServerParams;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Processes whose CPU is accounted; `server` must be one. */
  pids: Record<string, number>;
  /** Sample the server's RSS this often during the window (the soak). */
  rssSampleMs?: number;
  /** Close this server's connections once the round is over (its process is stopped after it). */
  last?: boolean;
}

export interface PrefillRequest {
  type: 'prefill';
  id: number;
  origin: string;
  params: ServerParams;
  count: number;
  /** Stop after this long, holding however many were made. */
  limitMs: number;
  connections: number;
}

export type LoadgenRequest = RunRequest | PrefillRequest | { type: 'stop' };

export interface Percentiles {
  count: number;
  p50: number;
  p99: number;
}

export interface RunResult {
  ops: number;
  failures: number;
  firstFailure: string | undefined;
  opsPerSec: number;
  latency: Percentiles;
  steps: Record<string, Percentiles>;
  cpu: CpuUse;
  serverRss: number | undefined;
  rssSamples: Array<[number, number]>;
  /** The measured window in wall-clock ms (Date.now), for the server-side measures of the same window. */
  window: { from: number; to: number };
}

export type LoadgenReply =
  | { type: 'ready' }
  /** The measured window of run `id` starts now (the orchestrator reads the server's GC counters). */
  | { type: 'window'; id: number }
  | { type: 'result'; id: number; result: RunResult }
  | { type: 'prefilled'; id: number; made: number; ms: number; failures: number; firstFailure: string | undefined }
  | { type: 'error'; id: number; message: string };

const recorder = new Recorder();
const pools = new Map<string, Connection[]>();

function connections(origin: string, count: number): Connection[] {
  let pool = pools.get(origin);
  if (!pool) {
    pool = [];
    pools.set(origin, pool);
  }
  while (pool.length < count) pool.push(new Connection(origin, recorder));
  return pool.slice(0, count);
}

function percentiles(h: RecordableHistogram): Percentiles {
  // Recorded in microseconds; reported in milliseconds.
  return { count: h.count, p50: h.count ? h.percentile(50) / 1000 : NaN, p99: h.count ? h.percentile(99) / 1000 : NaN };
}

function describe(error: unknown): string {
  if (error instanceof OperationFailed) return error.message;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

async function run(request: RunRequest): Promise<RunResult> {
  const workload = WORKLOADS[request.workload];
  const conns = connections(request.origin, request.connections);
  const state = await workload.prepare(conns, request.params);
  recorder.recording = false;
  recorder.reset();
  let stopped = false;
  let index = 0;
  const loops = conns.map(async (conn) => {
    while (!stopped) {
      const started = performance.now();
      try {
        await workload.operation(conn, request.params, state, index++);
        recorder.operation(true, performance.now() - started);
      } catch (error) {
        recorder.operation(false, 0, describe(error));
        // A refused or reset connection must not spin the loop.
        if (!(error instanceof OperationFailed)) await sleep(10);
      }
    }
  });

  await sleep(request.warmupMs);
  const rssSamples: Array<[number, number]> = [];
  recorder.reset();
  const before = cpuSnapshot(request.pids);
  const from = Date.now();
  recorder.recording = true;
  reply({ type: 'window', id: request.id });
  if (request.rssSampleMs) {
    const serverPid = request.pids.server!;
    const end = before.at + request.durationMs;
    for (let next = before.at; next < end; next += request.rssSampleMs) {
      await sleep(Math.max(0, next - performance.now()));
      const rss = processRss(serverPid);
      if (rss !== undefined) rssSamples.push([Math.round(performance.now() - before.at), rss]);
    }
    await sleep(Math.max(0, end - performance.now()));
  } else {
    await sleep(request.durationMs);
  }
  recorder.recording = false;
  const after = cpuSnapshot(request.pids);
  const to = Date.now();
  const ops = recorder.ops;
  const failures = recorder.failures;
  const firstFailure = recorder.firstFailure;
  const latency = percentiles(recorder.latency);
  const steps: Record<string, Percentiles> = {};
  for (const [name, h] of recorder.steps) steps[name] = percentiles(h);
  const serverRss = processRss(request.pids.server!);
  stopped = true;
  await Promise.all(loops);
  if (request.last) {
    pools.delete(request.origin);
    await Promise.all(conns.map((c) => c.close()));
  }
  const cpu = cpuBetween(before, after);
  return {
    ops,
    failures,
    firstFailure,
    opsPerSec: ops / (cpu.wallMs / 1000),
    latency,
    steps,
    cpu,
    serverRss,
    rssSamples,
    window: { from, to },
  };
}

async function prefill(
  request: PrefillRequest,
): Promise<{ made: number; ms: number; failures: number; firstFailure: string | undefined }> {
  const conns = connections(request.origin, request.connections);
  let remaining = request.count;
  let made = 0;
  let failures = 0;
  let firstFailure: string | undefined;
  const started = performance.now();
  const deadline = started + request.limitMs;
  await Promise.all(
    conns.map(async (conn) => {
      while (remaining > 0 && performance.now() < deadline) {
        remaining--;
        try {
          await pendingRequest(conn, request.params);
          made++;
        } catch (error) {
          failures++;
          firstFailure ??= describe(error);
          if (failures > request.count / 100) throw new Error(`prefill failing: ${firstFailure}`);
        }
      }
    }),
  );
  return { made, ms: performance.now() - started, failures, firstFailure };
}

function reply(message: LoadgenReply): void {
  process.send?.(message);
}

process.on('message', (message: LoadgenRequest) => {
  if (message.type === 'stop') {
    void Promise.all([...pools.values()].flat().map((c) => c.close())).finally(() => process.exit(0));
    return;
  }
  const work =
    message.type === 'run'
      ? run(message).then((result) => reply({ type: 'result', id: message.id, result }))
      : prefill(message).then((r) => reply({ type: 'prefilled', id: message.id, ...r }));
  work.catch((error: unknown) => reply({ type: 'error', id: message.id, message: describe(error) }));
});
process.on('disconnect', () => process.exit(0));
reply({ type: 'ready' });
