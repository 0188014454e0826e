/**
 * `npm run bench`: express-netauth side by side with node-oidc-provider, a bare Express 5 router and raw
 * node:http, measured in one run on one machine. See bench/README.md.
 *
 * Process layout: every measured window has a server process of its own, started for it and stopped after it
 * (the pending server alone lives on: it holds its 100,000 auth_req_ids), pinned to one core with taskset (where
 * it exists); the load generator is another child, pinned to a different core. Rounds are interleaved (A B C,
 * A B C, ...), each measured window follows a warm-up, and the CPU of the whole machine is compared with that of
 * our processes so a round that something else disturbed is flagged. Why a fresh process per window: processes
 * of the same code run at one of two speeds for their whole life (bench/README.md, "One server process, two
 * speeds"), so a row kept in one process for the run is one draw of that speed, and its median over rounds is
 * that draw again; a process per window makes the median one over as many draws as rounds. It also keeps every
 * row from carrying what earlier suites left in its process, and keeps idle servers off the measured core.
 *
 * Exits non-zero only when the harness breaks (a server dies, the load generator fails, a row's operations
 * mostly fail); a missed target is printed as MISS and never fails the run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadgenReply, LoadgenRequest, RunRequest, RunResult } from './loadgen.js';
import type { OrchestratorMessage, ServerMessage } from './servers/common.js';
import { SERVERS, type ServerEntry } from './servers/registry.js';
import { MIN_PROCESSES, PENDING_SERVER, SOAK_SERVER, SUITES, TARGETS, type Suite } from './plan.js';
import { fmt, mb, median, range, ratio, table } from './report.js';
import { MachineSpeed, PATIENCE_MS, SLOW_LIMIT } from './machine-speed.js';
import { RedisServer, redisServerMissing } from '../test/helpers/redis-server.js';
import { RedisCluster } from '../test/helpers/redis-cluster.js';
import {
  countFlows,
  pendingMemory,
  redisCostReport,
  redisTargetLines,
  type RedisCostRow,
  type RedisNode,
} from './redis-costs.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');

// ---------------------------------------------------------------------------------------------- settings

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: process.env.BENCH_QUICK === '1' },
    targets: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    warmup: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    pending: { type: 'string' },
    soak: { type: 'string' },
    only: { type: 'string' },
    servers: { type: 'string' },
    json: { type: 'string' },
    report: { type: 'string' },
    profile: { type: 'string' },
    budget: { type: 'string' },
  },
});

const quick = args.quick === true;
/**
 * `--targets` (`npm run bench:targets`): the rows issue 46's targets compare and the redis suite's round trips, ten
 * rounds (ten fresh processes per row), nothing else: about 15 minutes on 2 cores.
 */
const targetsOnly = args.targets === true;
const TARGET_ROWS = [
  'netauth',
  'express-bare',
  'netauth-redis',
  'netauth-idtoken',
  'oidc-provider',
  'netauth-idtoken-es256',
  'oidc-provider-es256',
  'netauth-jwt',
];
const settings = {
  quick,
  // Each round is a fresh server process per row, so a row's median is one over as many draws of the speed a
  // process settles in as rounds (bench/README.md, "One server process, two speeds"). 18 rows per round (flow 10,
  // frontend 3, guard 4, hostile 1) of 4 s + 3 s and a start-up, the prefill (<= 45 s), the redis suite and the soak
  // (60 s): about 20 minutes on 2 cores.
  rounds: Number(args.rounds ?? (quick ? 1 : targetsOnly ? 10 : MIN_PROCESSES)),
  // 4 s of warm-up, as the independent harness (../shared/peer-bench): at 2 s every row was still tiering up (the
  // peer ~8 % slower, express-netauth ~7 %), and on a slower host still more (bench/README.md, "Reconciliation").
  warmupMs: Number(args.warmup ?? (quick ? 0.3 : 4)) * 1000,
  durationMs: Number(args.duration ?? (quick ? 0.6 : 3)) * 1000,
  connections: Number(args.connections ?? 16),
  pending: Number(args.pending ?? (quick ? 2_000 : 100_000)),
  soakMs: Number(args.soak ?? (quick ? 1.5 : 60)) * 1000,
  /** The run stops adding rounds (for disturbed ones) when it would end later than this. */
  budgetMs: Number(args.budget ?? (quick ? 20 : 1500)) * 1000,
  /** The prefill of workload 4 stops here, holding however many it made. */
  prefillLimitMs: quick ? 3_000 : 45_000,
  /** The redis suite: flows counted with MONITOR per configuration, and pending auth_req_ids for its memory. */
  redisFlows: quick ? 20 : 100,
  redisPending: quick ? 300 : 5_000,
};
const only = new Set(
  (args.only ?? (targetsOnly ? 'flow,guard,redis' : 'flow,frontend,guard,hostile,pending,redis,soak')).split(','),
);
/** Restricts every suite to these server ids (for profiling one server, say). */
const serverFilter = args.servers ? new Set(args.servers.split(',')) : targetsOnly ? new Set(TARGET_ROWS) : undefined;
/** Server ids to start with `node --cpu-prof` (profiles land in bench/profiles/). */
const profiled = new Set((args.profile ?? '').split(',').filter(Boolean));

/** A round is disturbed when other programs used more than this share of a core during it. */
const FOREIGN_LIMIT = 0.1;
const STEAL_LIMIT = 0.05;
/** The load generator is the bottleneck (its numbers are lower bounds) above this share of its core. */
const CLIENT_BOUND = 0.9;
/** More failed operations than this share: the row's setup is broken, which is a harness failure. */
const FAILURE_LIMIT = 0.01;

const started = performance.now();
const harnessFailures: string[] = [];
const log = (text: string): void => {
  process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(3)}s] ${text}\n`);
};

// ------------------------------------------------------------------------------------------------ machine

function cpuModel(): string {
  try {
    return (
      /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown'
    );
  } catch {
    return os.cpus()[0]?.model ?? 'unknown';
  }
}

const hasTaskset = spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0;
const cores = os.availableParallelism();
/** Core of the load generator and of the servers: different ones whenever there are two. */
const LOAD_CORE = 0;
const SERVER_CORE = cores > 1 ? 1 : 0;
const pinning = hasTaskset && cores > 1;

/**
 * Pins a running process, every thread of it (`taskset -a`; threads it creates later inherit the mask). The
 * node processes start unpinned and are pinned once ready: loading tsx and the package is start-up work on
 * whichever core is free, not part of any measurement.
 */
function pin(pid: number, core: number): void {
  if (!pinning) return;
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`taskset could not pin pid ${pid} to core ${core}`);
}

// ------------------------------------------------------------------------------------------------ servers

/**
 * How long a server may take to report ready. A start takes 1-3 s; on Node 20 a process now and then never gets
 * there, its main thread waiting forever for tsx's module-loader thread (an idle one): it is killed and started
 * again rather than hanging the run.
 */
const START_TIMEOUT_MS = 60_000;
const START_ATTEMPTS = 3;

class StartTimeout extends Error {
  constructor(id: string) {
    super(`server ${id} did not report ready within ${START_TIMEOUT_MS / 1000} s`);
  }
}

class ServerProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  port = 0;
  pid = 0;
  private stderr = '';
  private exited = false;
  private stopping = false;
  private nextId = 1;
  private readonly waiting = new Map<number, (m: Exclude<ServerMessage, { type: 'ready' }>) => void>();

  constructor(
    readonly entry: ServerEntry,
    env: Record<string, string> = {},
  ) {
    const execArgv = ['--expose-gc', '--import', 'tsx'];
    if (profiled.has(entry.id)) {
      // One directory per server: node writes a profile per thread (tsx's loader runs in a worker), named by pid and thread.
      const dir = path.join(HERE, 'profiles', entry.id);
      mkdirSync(dir, { recursive: true });
      execArgv.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
    }
    this.child = spawn(process.execPath, [...execArgv, path.join(HERE, 'servers', entry.file)], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...entry.env,
        ...(entry.needsRedis && redis ? { BENCH_REDIS_URL: redis.url } : {}),
        ...env,
        NODE_ENV: 'production',
      },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.ready = new Promise((resolve, reject) => {
      const late = setTimeout(() => reject(new StartTimeout(entry.id)), START_TIMEOUT_MS);
      this.child.on('message', (message: ServerMessage) => {
        if (message.type === 'ready') {
          clearTimeout(late);
          this.port = message.port;
          this.pid = message.pid;
          try {
            pin(message.pid, SERVER_CORE);
            resolve();
          } catch (error) {
            reject(error as Error);
          }
        } else {
          this.waiting.get(message.id)?.(message);
          this.waiting.delete(message.id);
        }
      });
      this.child.on('exit', (code, signal) => {
        this.exited = true;
        clearTimeout(late);
        if (!this.stopping) {
          const text = `server ${entry.id} exited (${signal ?? code}) during the run:\n${this.stderr.trim()}`;
          harnessFailures.push(text);
          reject(new Error(text));
        }
      });
    });
    this.ready.catch(() => {});
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return !this.exited;
  }

  memory(gc = true): Promise<Extract<ServerMessage, { type: 'memory' }>> {
    return this.ask<Extract<ServerMessage, { type: 'memory' }>>((id) => ({ type: 'memory', id, gc }), 'a memory probe');
  }

  /** The server's event-loop delay between two wall-clock instants. */
  loop(from: number, to: number): Promise<Extract<ServerMessage, { type: 'loop' }>> {
    return this.ask<Extract<ServerMessage, { type: 'loop' }>>(
      (id) => ({ type: 'loop', id, from, to }),
      'an event-loop probe',
    );
  }

  /** CPU microseconds of one ID-token signature made as this server makes them (NaN when it signs none). */
  async signature(): Promise<number> {
    const reply = await this.ask<Extract<ServerMessage, { type: 'signature' }>>(
      (id) => ({ type: 'signature', id }),
      'a signature probe',
    );
    return reply.us;
  }

  private ask<T extends Exclude<ServerMessage, { type: 'ready' }>>(
    message: (id: number) => OrchestratorMessage,
    what: string,
  ): Promise<T> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, resolve as (m: Exclude<ServerMessage, { type: 'ready' }>) => void);
      this.send(message(id));
      setTimeout(() => reject(new Error(`server ${this.entry.id} did not answer ${what}`)), 30_000).unref();
    });
  }

  private send(message: OrchestratorMessage): void {
    if (this.child.connected) this.child.send(message);
  }

  /** Ends a process that never became ready (its exit is not a harness failure). */
  kill(): void {
    this.stopping = true;
    this.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    this.stopping = true;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.send({ type: 'stop' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await gone;
    clearTimeout(timer);
  }
}

// The loopback redis-server of the Redis rows: the tests' launcher (free port, no persistence, own temp dir,
// killed when this process exits), pinned to the servers' core once it answers.
let redis: RedisServer | undefined;
/** Every suite's rows as planned, before rows that cannot run here are dropped (they print as n/a). */
const plannedServers = new Map(SUITES.map((s) => [s.id, [...s.servers]]));
/** Server ids that could not run, with the reason (printed as n/a rows and targets). */
const unavailable = new Map<string, string>();

// ---------------------------------------------------------------------------------------- load generator

class LoadGenerator {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (m: LoadgenReply) => void; reject: (e: Error) => void }>();
  /** Called when a run's measured window starts. */
  onWindow: ((id: number) => void) | undefined;

  constructor() {
    this.child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, 'loadgen.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (message: LoadgenReply) => {
        if (message.type === 'ready') {
          try {
            pin(this.child.pid!, LOAD_CORE);
            return resolve();
          } catch (error) {
            return reject(error as Error);
          }
        }
        if (message.type === 'window') {
          this.onWindow?.(message.id);
          return;
        }
        const entry = this.waiting.get(message.id);
        this.waiting.delete(message.id);
        if (message.type === 'error') entry?.reject(new Error(`load generator: ${message.message}`));
        else entry?.resolve(message);
      });
      this.child.on('exit', (code) => {
        const error = new Error(`load generator exited (${code})`);
        reject(error);
        for (const w of this.waiting.values()) w.reject(error);
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  private request<T extends LoadgenReply>(message: LoadgenRequest & { id: number }): Promise<T> {
    return new Promise((resolve, reject) => {
      this.waiting.set(message.id, { resolve: resolve as (m: LoadgenReply) => void, reject });
      this.child.send(message);
    });
  }

  /**
   * One round. With `server`, also the server's GC pause time during the measured window (read over IPC at
   * the window's start and when the result arrives, a few milliseconds after its end).
   */
  async run(
    request: Omit<RunRequest, 'type' | 'id'>,
    server?: ServerProcess,
    options: { loop?: boolean } = {},
  ): Promise<RunResult & ServerSide> {
    const id = this.nextId++;
    let atStart: Promise<Extract<ServerMessage, { type: 'memory' }> | undefined> = Promise.resolve(undefined);
    if (server) {
      this.onWindow = (windowId) => {
        if (windowId === id) atStart = server.memory(false).catch(() => undefined);
      };
    }
    const reply = await this.request<Extract<LoadgenReply, { type: 'result' }>>({ type: 'run', id, ...request });
    this.onWindow = undefined;
    if (!server) return reply.result;
    const [start, end] = await Promise.all([atStart, server.memory(false).catch(() => undefined)]);
    // The event loop's delays during the window, asked for by wall-clock time once it is over: a hold that
    // delayed the window's probes is still counted in the window it overlapped.
    const delay = options.loop
      ? await server.loop(reply.result.window.from, reply.result.window.to).catch(() => undefined)
      : undefined;
    const loop = delay ? { loop: { p99Ms: delay.p99Ms, maxMs: delay.maxMs } } : {};
    return start && end
      ? { ...reply.result, gc: { ms: end.gcMs - start.gcMs, majorMs: end.majorGcMs - start.majorGcMs }, ...loop }
      : { ...reply.result, ...loop };
  }

  prefill(origin: string, server: ServerEntry, count: number, limitMs: number) {
    return this.request<Extract<LoadgenReply, { type: 'prefilled' }>>({
      type: 'prefill',
      id: this.nextId++,
      origin,
      params: server.params,
      count,
      limitMs,
      connections: settings.connections,
    });
  }

  stop(): void {
    if (this.child.connected) this.child.send({ type: 'stop' } satisfies LoadgenRequest);
  }
}

// ------------------------------------------------------------------------------------------------ rounds

/** What the server reports about a window over IPC: GC pause time and event-loop delay. */
interface ServerSide {
  gc?: { ms: number; majorMs: number };
  loop?: { p99Ms: number; maxMs: number };
}

interface Measured {
  suite: string;
  server: string;
  round: number;
  /** The server process measured (runs saved before it was recorded have none: one process per window then). */
  pid?: number;
  result: RunResult & ServerSide;
  /** The speed probe's timings (ms) just before and just after the window (runs saved before it have none). */
  probeMs?: [number, number];
  /** The smaller of the two against the run's fastest timing (1 = full speed): both edges slowed, or not slowed. */
  slowdown?: number;
  noisy: boolean;
  clientBound: boolean;
  /** ID-token rows: CPU microseconds of one signature in this process, timed after the window (issue 46). */
  signatureUs?: number;
}

const measured: Measured[] = [];
/** The server processes alive now: the one being measured, the pending one (it holds its prefill), the soak's. */
const servers = new Map<string, ServerProcess>();
let loadgen: LoadGenerator;
let speed: MachineSpeed | undefined;

function pidsFor(server: ServerProcess): Record<string, number> {
  const pids: Record<string, number> = { server: server.pid, loadgen: loadgen.pid, orchestrator: process.pid };
  // An idle server (the pending one) is ours too: its timers must not count as another program's CPU.
  for (const [id, other] of servers) if (other !== server && other.alive) pids[`idle:${id}`] = other.pid;
  // redis-server is ours too; its CPU is reported with the Redis row (srv us/op counts the node process only).
  if (redis?.pid !== undefined) pids.redis = redis.pid;
  return pids;
}

function checkRow(label: string, result: RunResult): void {
  const total = result.ops + result.failures;
  if (result.ops === 0 || result.failures / Math.max(1, total) > FAILURE_LIMIT) {
    harnessFailures.push(
      `${label}: ${result.ops} operations succeeded, ${result.failures} failed; first failure: ${result.firstFailure ?? '-'}`,
    );
  }
}

/** Server start-up times so far (ms): what a round will take beyond its windows, for the time budget. */
const startups: number[] = [];

/** The server process of a row: the long-lived one, or one started now for this window alone. */
async function serverFor(id: string, env: Record<string, string>): Promise<ServerProcess> {
  const running = servers.get(id);
  if (running) return running;
  const entry = SERVERS[id];
  if (!entry) throw new Error(`no server "${id}" in bench/servers/registry.ts`);
  for (let attempt = 1; ; attempt++) {
    const begun = performance.now();
    const server = new ServerProcess(entry, env);
    servers.set(id, server);
    try {
      await server.ready;
    } catch (error) {
      if (!(error instanceof StartTimeout) || attempt === START_ATTEMPTS) throw error;
      log(`${error.message}: started again (attempt ${attempt + 1} of ${START_ATTEMPTS})`);
      server.kill();
      continue;
    }
    startups.push(performance.now() - begun);
    return server;
  }
}

/** Other programs' CPU, or steal, above their limits during the window. */
function cpuDisturbed(result: RunResult): boolean {
  return (result.cpu.foreign ?? 0) > FOREIGN_LIMIT || (result.cpu.steal ?? 0) > STEAL_LIMIT;
}

/**
 * Every window judged again against the run's fastest probe timing, which may have come after it: a run that
 * began on a slowed machine does not take that speed for the machine's own.
 */
function judgeSpeed(): void {
  if (!speed) return;
  for (const m of measured) {
    if (!m.probeMs) continue;
    m.slowdown = speed.slowdown(Math.min(...m.probeMs));
    m.noisy = cpuDisturbed(m.result) || m.slowdown > SLOW_LIMIT;
  }
}

async function measure(suite: Suite, id: string, round: number): Promise<Measured> {
  const suiteId = suite.id;
  // Every row gets a process per window but the pending one, which lives through the flow suite with its prefill.
  const fresh = id !== PENDING_SERVER;
  // A slowed-down machine is waited for (a while): a window measured on it is left out, and its round run again.
  const before = await speed?.settled((slowdown) =>
    log(
      `the machine is slowed down (speed probe ${fmt(slowdown, 2)}x its fastest): waiting for it, at most ${PATIENCE_MS / 1000} s`,
    ),
  );
  const server = await serverFor(id, suite.eventLoop ? { BENCH_LOOP_PROBE: '1' } : {});
  let result: RunResult & ServerSide;
  let signatureUs: number | undefined;
  try {
    result = await loadgen.run(
      {
        origin: server.origin,
        workload: suite.workload,
        params: server.entry.params,
        connections: settings.connections,
        warmupMs: settings.warmupMs,
        durationMs: settings.durationMs,
        pids: pidsFor(server),
        last: fresh,
      },
      server,
      { loop: suite.eventLoop === true },
    );
    // After the window, the server idle: what one signature costs in this process, made its own way.
    if (server.entry.signs) signatureUs = await server.signature().catch(() => undefined);
  } finally {
    if (fresh) {
      servers.delete(id);
      await server.stop();
    }
  }
  const after = await speed?.probe();
  const probeMs: [number, number] | undefined =
    before !== undefined && after !== undefined ? [before, after] : undefined;
  const slowdown = probeMs && speed ? speed.slowdown(Math.min(...probeMs)) : undefined;
  const noisy = cpuDisturbed(result) || (slowdown ?? 1) > SLOW_LIMIT;
  const clientBound = (result.cpu.processes.loadgen ?? 0) > CLIENT_BOUND;
  const m: Measured = {
    suite: suiteId,
    server: server.entry.id,
    round,
    pid: server.pid,
    result,
    ...(probeMs ? { probeMs, slowdown } : {}),
    noisy,
    clientBound,
    ...(signatureUs !== undefined && Number.isFinite(signatureUs) ? { signatureUs } : {}),
  };
  measured.push(m);
  checkRow(`${suiteId}/${server.entry.id} round ${round + 1}`, result);
  log(
    `${suiteId} round ${round + 1} ${server.entry.id.padEnd(16)} ${fmt(result.opsPerSec).padStart(7)} ops/s  p50 ${fmt(result.latency.p50, 2)} ms  ` +
      `server ${fmt(result.cpu.processes.server, 2)} core  load ${fmt(result.cpu.processes.loadgen, 2)} core  other ${fmt(result.cpu.foreign, 2)} core` +
      (slowdown === undefined ? '' : `  probe ${fmt(slowdown, 2)}x`) +
      (noisy ? '  DISTURBED' : ''),
  );
  return m;
}

// ------------------------------------------------------------------------------------------------ report

function allRowsOf(suite: string, server: string): Measured[] {
  return measured.filter((m) => m.suite === suite && m.server === server);
}

/** The rounds that count: the undisturbed ones when there are any, else all (and the table says so). */
function rowsOf(suite: string, server: string): Measured[] {
  const all = allRowsOf(suite, server);
  const clean = all.filter((m) => !m.noisy);
  return clean.length > 0 ? clean : all;
}

/** How many server processes these windows ran in: one per window but for the pending row, which holds its prefill. */
function processesOf(ms: readonly Measured[]): number {
  return new Set(ms.map((m) => m.pid ?? `round ${m.round}`)).size;
}

const cpuPerOp = (x: RunResult): number => ((x.cpu.processes.server ?? NaN) * x.cpu.wallMs * 1000) / Math.max(1, x.ops);

/**
 * Median over rounds of a per-round ratio (throughput by default): paired rounds cancel the machine's drift.
 * Rounds where both rows were undisturbed are used when there are any.
 */
function pairedRatio(
  suite: string,
  row: string,
  versus: string,
  by: 'throughput' | 'cpu' = 'throughput',
): number | undefined {
  return pairedRatioOf(suite, row, versus, by)?.value;
}

interface PairedRatio {
  /** Median of the per-round ratios. */
  value: number;
  /** Smallest and largest per-round ratio: the spread the median is taken over. */
  range: [number, number] | undefined;
  /** Rounds where both rows were undisturbed. */
  clean: number;
  /** Server processes behind the ratio: the fewer of the two rows'. */
  processes: number;
}

/**
 * Server CPU per operation without the signature: the ID-token rows' own work, whatever the host's RSA or ECDSA
 * speed (each window's CPU per flow less one signature timed in the same process).
 */
const ownCpuPerOp = (m: Measured): number => cpuPerOp(m.result) - (m.signatureUs ?? Number.NaN);

function pairedRatioOf(
  suite: string,
  row: string,
  versus: string,
  by: 'throughput' | 'cpu' | 'own-cpu',
): PairedRatio | undefined {
  const a = allRowsOf(suite, row);
  const b = allRowsOf(suite, versus);
  if (a.length === 0 || b.length === 0) return undefined;
  const pairs: Array<[Measured, Measured]> = [];
  for (const m of a) {
    const other = b.find((x) => x.round === m.round);
    if (other) pairs.push([m, other]);
  }
  const clean = pairs.filter(([x, y]) => !x.noisy && !y.noisy);
  const used = clean.length > 0 ? clean : pairs;
  const ratios = used
    .map(([x, y]) =>
      by === 'throughput'
        ? x.result.opsPerSec / y.result.opsPerSec
        : by === 'cpu'
          ? cpuPerOp(y.result) / cpuPerOp(x.result)
          : ownCpuPerOp(y) / ownCpuPerOp(x),
    )
    .filter((r) => Number.isFinite(r));
  if (ratios.length === 0) return undefined;
  const processes = Math.min(processesOf(used.map(([x]) => x)), processesOf(used.map(([, y]) => y)));
  return { value: median(ratios), range: range(ratios), clean: clean.length, processes };
}

const SHORT: Record<string, string> = {
  'oidc-provider': 'vs oidc-prov',
  'express-bare': 'vs Express',
  'raw-http': 'vs raw http',
  netauth: 'vs memory',
};

function suiteTable(suiteId: string): string | undefined {
  const suite = SUITES.find((s) => s.id === suiteId)!;
  const refs = suite.references.filter((r) => suite.servers.includes(r));
  const loopColumns = suite.eventLoop ? ['loop p99 ms', 'loop max ms'] : [];
  const header = [
    ...['server', 'procs', 'ops/s', 'ops/s min-max', 'p50 ms', 'p99 ms', 'RSS MB', 'srv us/op', 'srv core'],
    'GC % (major)',
    ...loopColumns,
    ...refs.map((r) => SHORT[r] ?? `vs ${r}`),
    'notes',
  ];
  const rows: string[][] = [];
  for (const id of suite.servers) {
    const all = allRowsOf(suiteId, id);
    const ms = rowsOf(suiteId, id);
    if (ms.length === 0) continue;
    const r = (f: (x: Measured['result']) => number | undefined): number => median(ms.map((m) => f(m.result) ?? NaN));
    const gcShare = (part: 'ms' | 'majorMs') => (x: Measured['result']) =>
      x.gc ? (100 * x.gc[part]) / x.cpu.wallMs : undefined;
    const notes: string[] = [];
    const noisy = all.filter((m) => m.noisy).length;
    if (noisy === all.length) notes.push(`all ${noisy} rounds disturbed`);
    else if (noisy) notes.push(`${noisy} disturbed round${noisy > 1 ? 's' : ''} left out, ${ms.length} used`);
    if (ms.some((m) => m.clientBound)) notes.push('client-bound');
    if (SERVERS[id]?.needsRedis)
      notes.push(
        `+ redis-server ${fmt(
          r((x) => x.cpu.processes.redis),
          2,
        )} core`,
      );
    const signatures = ms.flatMap((m) => (m.signatureUs === undefined ? [] : [m.signatureUs]));
    if (signatures.length) notes.push(`1 signature ${fmt(median(signatures))} us`);
    const failures = ms.reduce((n, m) => n + m.result.failures, 0);
    if (failures) notes.push(`${failures} failed ops`);
    const spread = range(ms.map((m) => m.result.opsPerSec));
    const processes = processesOf(ms);
    if (processes < ms.length) notes.push(`${ms.length} windows in ${processes} process${processes > 1 ? 'es' : ''}`);
    rows.push([
      SERVERS[id]!.label,
      String(processes),
      fmt(r((x) => x.opsPerSec)),
      spread ? `${fmt(spread[0])}-${fmt(spread[1])}` : '-',
      fmt(
        r((x) => x.latency.p50),
        2,
      ),
      fmt(
        r((x) => x.latency.p99),
        2,
      ),
      mb(r((x) => x.serverRss)),
      fmt(r(cpuPerOp)),
      fmt(
        r((x) => x.cpu.processes.server),
        2,
      ),
      `${fmt(r(gcShare('ms')))} (${fmt(r(gcShare('majorMs')))})`,
      ...(suite.eventLoop
        ? [
            fmt(
              r((x) => x.loop?.p99Ms),
              1,
            ),
            fmt(Math.max(...ms.map((m) => m.result.loop?.maxMs ?? NaN)), 1),
          ]
        : []),
      ...refs.map((ref) => (ref === id ? '1.00x' : ratio(pairedRatio(suiteId, id, ref)))),
      notes.join('; '),
    ]);
  }
  const missing = (plannedServers.get(suiteId) ?? [])
    .filter((id) => unavailable.has(id))
    .map((id) => `${SERVERS[id]?.label ?? id}: n/a (${unavailable.get(id)})`);
  const na = Object.entries(suite.notApplicable ?? {})
    .filter(([id]) => !serverFilter || serverFilter.has(id))
    .map(([id, why]) => `${SERVERS[id]?.label ?? id}: n/a (${why})`);
  if (rows.length === 0 && missing.length === 0) return undefined;
  return [
    suite.title,
    ...(rows.length ? [table(header, rows)] : []),
    ...[...missing, ...na].map((line) => `  ${line}`),
  ].join('\n');
}

interface PendingResult {
  asked: number;
  count: number;
  prefillMs: number;
  before: Extract<ServerMessage, { type: 'memory' }>;
  after: Extract<ServerMessage, { type: 'memory' }>;
}

interface SoakResult {
  result: RunResult;
  early: number;
  late: number;
  growth: number;
  heapEarly: number | undefined;
  heapLate: number | undefined;
}

let pendingResult: PendingResult | undefined;
let soakResult: SoakResult | undefined;
let redisCosts: RedisCostRow[] = [];

function targetLines(): string[] {
  const lines: string[] = [];
  for (const target of TARGETS) {
    if (target.kind === 'ratio') {
      const paired = pairedRatioOf(target.suite, target.row, target.versus, 'throughput');
      const value = paired?.value;
      if (value === undefined) {
        const why =
          unavailable.get(target.row) ??
          (SERVERS[target.row] ? 'not measured in this run' : `no ${target.row} row: not in this tree yet`);
        lines.push(`  n/a   ${target.text}  (${why})`);
      } else {
        const byCpu = pairedRatio(target.suite, target.row, target.versus, 'cpu');
        const own = pairedRatioOf(target.suite, target.row, target.versus, 'own-cpu')?.value;
        const ownText = own === undefined ? '' : `; by server CPU without the signature: ${ratio(own)}`;
        const { clean, processes } = paired!;
        const basis =
          clean > 0 ? `${clean} undisturbed round${clean > 1 ? 's' : ''}` : 'DISTURBED rounds only: not reliable';
        const spread = paired!.range ? `${ratio(paired!.range[0])}-${ratio(paired!.range[1])}` : '-';
        const pairs = `${processes} process pair${processes === 1 ? '' : 's'}`;
        const few = processes < MIN_PROCESSES ? `; fewer than the ${MIN_PROCESSES} fresh processes per row asked` : '';
        lines.push(
          `  ${value >= target.min ? 'PASS' : 'MISS'}  ${target.text}: ${ratio(value)}, median of ${pairs} ` +
            `(spread ${spread}; by server CPU per operation: ${ratio(byCpu)}${ownText}; ${basis}${few})`,
        );
      }
    } else if (target.kind === 'loop') {
      const rows = rowsOf(target.suite, target.row).filter((m) => m.result.loop !== undefined);
      if (rows.length === 0) {
        lines.push(`  n/a   ${target.text}  (not measured in this run)`);
      } else {
        // The worst window counts: one blocked request is the failure this target is about.
        const worst = Math.max(...rows.map((m) => m.result.loop!.maxMs));
        const p99 = median(rows.map((m) => m.result.loop!.p99Ms));
        const ops = median(rows.map((m) => m.result.opsPerSec));
        lines.push(
          `  ${worst <= target.maxMs ? 'PASS' : 'MISS'}  ${target.text}: max ${fmt(worst, 1)} ms over ${rows.length} window${rows.length > 1 ? 's' : ''} ` +
            `(p99 ${fmt(p99, 1)} ms) at ${fmt(ops)} hostile requests/s`,
        );
      }
    } else if (soakResult) {
      const judged = settings.soakMs >= 60_000;
      const verdict = !judged ? 'n/a ' : soakResult.growth <= target.maxGrowth ? 'PASS' : 'MISS';
      const growth = Number.isFinite(soakResult.growth) ? `${(soakResult.growth * 100).toFixed(1)}%` : '-';
      lines.push(
        `  ${verdict}  ${target.text}: RSS ${mb(soakResult.early)} -> ${mb(soakResult.late)} MB (${growth}, limit ${target.maxGrowth * 100}%) ` +
          `over ${settings.soakMs / 1000} s at ${fmt(soakResult.result.opsPerSec)} flows/s${judged ? '' : ' (not judged: shorter than 60 s)'}` +
          ((soakResult.result.cpu.foreign ?? 0) > FOREIGN_LIMIT
            ? `; DISTURBED: other programs used ${fmt(soakResult.result.cpu.foreign, 2)} core`
            : ''),
        `        live heap after a full GC: ${mb(soakResult.heapEarly)} MB at ${settings.soakMs / 4000} s, ${mb(soakResult.heapLate)} MB at ${(settings.soakMs * 0.95) / 1000} s ` +
          '(flat live heap with growing RSS = V8 sizing its heap, not a leak)',
      );
    } else {
      lines.push(`  n/a   ${target.text}  (soak not run)`);
    }
  }
  return lines;
}

interface Machine {
  cores: number;
  cpu: string;
  node: string;
  os: string;
  pinning: boolean;
}

function thisMachine(): Machine {
  return { cores, cpu: cpuModel(), node: process.version, os: `${os.platform()} ${os.release()}`, pinning };
}

function report(machine: Machine): string {
  const out: string[] = [];
  out.push(
    `machine: ${machine.cores} cores (nproc), ${machine.cpu}, node ${machine.node}${machine.os ? `, ${machine.os}` : ''}`,
    `pinning: ${machine.pinning ? `servers on core ${SERVER_CORE}, load generator on core ${LOAD_CORE} (taskset)` : 'none (no taskset or a single core)'}`,
    `settings: ${settings.rounds} interleaved rounds (more when some are disturbed, time permitting), each a fresh ` +
      `server process per row, x ${settings.durationMs / 1000} s measured, ${settings.warmupMs / 1000} s warm-up ` +
      `before each; ${settings.connections} keep-alive connections (undici); medians over the processes, with their ` +
      `spread (min-max)` +
      `${settings.quick ? '  [QUICK SMOKE RUN: numbers are indicative only]' : ''}`,
    '',
  );
  for (const suite of SUITES) {
    const text = suiteTable(suite.id);
    if (text) out.push(text, '');
  }
  if (pendingResult) {
    const p = pendingResult;
    const rss = p.after.rss - p.before.rss;
    const heap = p.after.heapUsed - p.before.heapUsed;
    const withPending = pairedRatio('flow', PENDING_SERVER, 'netauth');
    out.push(
      `(4) ${fmt(p.count)} pending auth_req_ids (consent needed, none on record), created over HTTP at ${fmt(p.count / (p.prefillMs / 1000))}/s` +
        (p.count < p.asked
          ? ` (of ${fmt(p.asked)} asked: the prefill stopped at its ${settings.prefillLimitMs / 1000} s limit)`
          : '') +
        ':',
      `    RSS +${mb(rss)} MB (${fmt(rss / p.count)} B each), live heap after GC +${mb(heap)} MB (${fmt(heap / p.count)} B each); ` +
        `backend flow while held: ${ratio(withPending)} of the same server without them`,
      '',
    );
  }
  if (redisCosts.length > 0) out.push(redisCostReport(redisCosts), '');
  out.push(
    "columns: procs = server processes the row's medians are over (undisturbed windows); ops/s = completed",
    '  operations per second (a flow = bc-authorize + token, or authorize + token), median over them, min-max their',
    '  spread;',
    '  p50/p99 = latency of one operation; RSS = server resident memory at the end of a round; srv us/op = server CPU',
    '  time per operation; srv core = server CPU use (1.00 = its core saturated); GC % = share of the window the server',
    '  spent in GC pauses (mark-compact in parentheses); "vs X" = median over rounds of this row\'s throughput / X\'s in',
    "  the same round; loop p99/max ms (hostile suite) = the server's event-loop delay during the window (median p99,",
    '  worst max): how late a 10 ms timer fired in the server, i.e. how long anything held its loop.',
    'like for like: node-oidc-provider requires `openid` on CIBA and then signs an ID token per flow (RS256 by default; ES256 with',
    '  an EC key and id_token_signed_response_alg); each "+ ID token" row requests `openid` and signs one with the same algorithm, so',
    '  each pair does the same work: 2 requests, Basic client authentication, an opaque access token kept for its lifetime (the',
    "  peer's own memory adapter without its 1,000-record cap), one signature. The plain express-netauth rows issue no ID token",
    '  and are compared with bare Express only. The peer runs on Koa without Express.',
    '',
    'targets:',
    ...targetLines(),
    ...(only.has('redis') ? redisTargetLines(redisCosts) : []),
  );
  const disturbed = measured.filter((m) => cpuDisturbed(m.result)).length;
  const slow = measured.filter((m) => (m.slowdown ?? 1) > SLOW_LIMIT).length;
  const limit = `${Math.round((SLOW_LIMIT - 1) * 100)}%`;
  out.push(
    disturbed
      ? `CPU check: ${disturbed} of ${measured.length} rounds had other programs using > ${FOREIGN_LIMIT * 100}% of a core (or steal > ${STEAL_LIMIT * 100}%); their rows say so. Rerun on a quiet machine for numbers to record.`
      : `CPU check: no other program used more than ${FOREIGN_LIMIT * 100}% of a core during any measured round.`,
    !measured.some((m) => m.probeMs)
      ? 'speed check: not made in this run.'
      : slow
        ? `speed check: ${slow} of ${measured.length} rounds began and ended with the servers' core more than ${limit} slower than its fastest in the run (the host slowed the machine down); left out as disturbed.`
        : `speed check: at the edges of every window the servers' core ran within ${limit} of its fastest in the run.`,
  );
  if (measured.some((m) => m.clientBound)) {
    out.push(
      "client-bound: the load generator used > 90% of its core; that row's throughput is a lower bound (compare srv us/op).",
    );
  }
  return out.join('\n');
}

// -------------------------------------------------------------------------------------------------- main

/**
 * The express-netauth rows run the compiled package (dist/, `npm run build`), as its users do: through tsx, the
 * TypeScript sources carry esbuild's helpers (a `__name` call for every function made), a few percent of a request.
 */
function buildPackage(): void {
  const started = performance.now();
  const result = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`npm run build failed:\n${result.stdout}${result.stderr}`);
  log(`built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s (the package as users run it)`);
}

async function main(): Promise<void> {
  buildPackage();
  if (serverFilter) for (const suite of SUITES) suite.servers = suite.servers.filter((s) => serverFilter.has(s));
  const wanted = new Set<string>();
  for (const suite of SUITES) if (only.has(suite.id)) for (const s of suite.servers) wanted.add(s);
  if (only.has('pending') && (!serverFilter || serverFilter.has(PENDING_SERVER))) wanted.add(PENDING_SERVER);
  if (!wanted.has(PENDING_SERVER)) {
    for (const suite of SUITES) suite.servers = suite.servers.filter((s) => s !== PENDING_SERVER);
    wanted.delete(PENDING_SERVER);
  }
  if (only.has('soak') && (!serverFilter || serverFilter.has(SOAK_SERVER))) wanted.add(SOAK_SERVER);
  const measureMs = settings.warmupMs + settings.durationMs + 300;
  const soakMs = wanted.has(SOAK_SERVER) ? settings.warmupMs + settings.soakMs : 0;
  const elapsed = (): number => performance.now() - started;

  if ([...wanted].some((id) => SERVERS[id]?.needsRedis)) {
    const missing = redisServerMissing();
    if (missing) {
      // The Redis rows print n/a with the reason; the rest of the run goes on.
      for (const id of [...wanted]) {
        if (!SERVERS[id]?.needsRedis) continue;
        unavailable.set(id, missing);
        wanted.delete(id);
        for (const suite of SUITES) suite.servers = suite.servers.filter((s) => s !== id);
      }
      log(`Redis rows n/a: ${missing}`);
    } else {
      redis = await RedisServer.start();
      if (pinning && redis.pid !== undefined) pin(redis.pid, SERVER_CORE);
      log(`redis-server on ${redis.url}${pinning ? ` (pinned to core ${SERVER_CORE})` : ''}`);
    }
  }
  const suites = SUITES.filter((s) => only.has(s.id) && s.servers.length > 0);
  for (const id of wanted) if (!SERVERS[id]) throw new Error(`no server "${id}" in bench/servers/registry.ts`);
  log(
    `starting the load generator${wanted.has(PENDING_SERVER) ? ' and the pending server' : ''}${pinning ? ' (pinned)' : ''}; every other server starts for its window`,
  );
  loadgen = new LoadGenerator();
  speed = new MachineSpeed((pid) => pin(pid, SERVER_CORE));
  const [pending] = await Promise.all([
    wanted.has(PENDING_SERVER) ? serverFor(PENDING_SERVER, {}) : undefined,
    loadgen.ready,
    speed.start(),
  ]);
  if (pending) {
    // Warm the server up with the flow it will be measured on, then count what the pending requests add.
    await loadgen.run({
      origin: pending.origin,
      workload: 'backend-flow',
      params: pending.entry.params,
      connections: settings.connections,
      warmupMs: 0,
      durationMs: settings.warmupMs,
      pids: pidsFor(pending),
    });
    const before = await pending.memory();
    log(`prefilling ${fmt(settings.pending)} pending auth_req_ids`);
    const prefill = await loadgen.prefill(pending.origin, pending.entry, settings.pending, settings.prefillLimitMs);
    if (prefill.failures) harnessFailures.push(`prefill: ${prefill.failures} failed; first: ${prefill.firstFailure}`);
    if (prefill.made < settings.pending) log(`prefill stopped at its time limit with ${fmt(prefill.made)} pending`);
    const after = await pending.memory();
    pendingResult = { asked: settings.pending, count: prefill.made, prefillMs: prefill.ms, before, after };
  }

  for (const [index, suite] of suites.entries()) {
    // A window's time includes starting its server (the median start-up so far).
    const windowMs = (): number => measureMs + (startups.length ? median(startups) : 0);
    const roundMs = suite.servers.length * windowMs();
    const laterMs =
      suites.slice(index + 1).reduce((t, s) => t + s.servers.length * windowMs() * settings.rounds, 0) + soakMs;
    const disturbed = (round: number): boolean =>
      measured.some((m) => m.suite === suite.id && m.round === round && m.noisy);
    let clean = 0;
    for (let round = 0; ; round++) {
      const planned = round < settings.rounds;
      // Rounds some other program disturbed are run again while the time budget allows, up to as many again.
      const retry =
        !planned &&
        clean < settings.rounds &&
        round < 2 * settings.rounds &&
        elapsed() + roundMs + laterMs <= settings.budgetMs;
      if (!planned && !retry) break;
      if (retry) log(`${suite.id}: extra round ${round + 1}, for disturbed ones`);
      // Each round starts one row later (A B C, B C A, C A B, ...): no row is always the one measured first,
      // right after another suite or a pause, so what a position in the round costs is shared out too.
      const rows = suite.servers.length;
      for (let k = 0; k < rows; k++) await measure(suite, suite.servers[(round + k) % rows]!, round);
      if (!disturbed(round)) clean++;
    }
    // Once no later suite has a row on it, the pending server stops: it would idle beside the measured ones.
    const pendingServer = servers.get(PENDING_SERVER);
    if (pendingServer && !suites.slice(index + 1).some((s) => s.servers.includes(PENDING_SERVER))) {
      servers.delete(PENDING_SERVER);
      await pendingServer.stop();
    }
  }

  if (only.has('redis') && (!serverFilter || targetsOnly)) await redisSuite();

  const soak = wanted.has(SOAK_SERVER) ? await serverFor(SOAK_SERVER, {}) : undefined;
  if (soak) {
    log(`soak: ${settings.soakMs / 1000} s of backend flows, RSS sampled every second`);
    // Live heap after a full GC at the end of the first quarter and near the end: tells a leak (live objects
    // growing) from V8 sizing its heap (RSS growing while the live heap stays flat). Two GCs in 60 s.
    const heapAt = (fraction: number) =>
      new Promise<number | undefined>((resolve) => {
        setTimeout(
          () => {
            soak.memory(true).then(
              (m) => resolve(m.heapUsed),
              () => resolve(undefined),
            );
          },
          settings.warmupMs + fraction * settings.soakMs,
        );
      });
    const heaps = Promise.all([heapAt(0.25), heapAt(0.95)]);
    const result = await loadgen.run({
      origin: soak.origin,
      workload: 'backend-flow',
      params: soak.entry.params,
      connections: settings.connections,
      warmupMs: settings.warmupMs,
      durationMs: settings.soakMs,
      pids: pidsFor(soak),
      rssSampleMs: 1000,
    });
    checkRow('soak', result);
    // Second quarter against the last: the first quarter still has the heap growing to its working size.
    const samples = result.rssSamples;
    const quarter = (q: number): number[] =>
      samples
        .filter(([t]) => t >= (q * settings.soakMs) / 4 && t < ((q + 1) * settings.soakMs) / 4)
        .map(([, rss]) => rss);
    const early = median(quarter(1));
    const late = median(quarter(3));
    const [heapEarly, heapLate] = await heaps;
    soakResult = { result, early, late, growth: late / early - 1, heapEarly, heapLate };
  }
}

/**
 * The redis suite (bench/redis-costs.ts): the netauth server on a redis-server of its own and on a Redis Cluster
 * of three masters (given one node's URL), with rate limits off and on: round trips per flow, flows per second,
 * and (rate limits off) Redis memory per pending auth_req_id.
 */
async function redisSuite(): Promise<void> {
  const missing = redisServerMissing();
  if (missing) {
    log(`redis suite n/a: ${missing}`);
    return;
  }
  const entry = SERVERS['netauth-redis']!;
  const topologies: Array<{
    name: string;
    start: () => Promise<{ url: string; nodes: RedisNode[]; pids: number[]; stop: () => Promise<void> }>;
  }> = [
    {
      name: 'single node',
      start: async () => {
        const server = await RedisServer.start();
        return { url: server.url, nodes: [server], pids: [server.pid!], stop: () => server.destroy() };
      },
    },
    {
      name: 'cluster (3 masters)',
      start: async () => {
        const cluster = await RedisCluster.start({ masters: 3 });
        return {
          url: cluster.nodes[0]!.url,
          nodes: cluster.nodes,
          pids: cluster.nodes.map((n) => n.pid!),
          stop: () => cluster.destroy(),
        };
      },
    },
  ];
  // The quick smoke runs the code paths once: one node is enough.
  for (const topology of settings.quick ? topologies.slice(0, 1) : topologies) {
    const redisSet = await topology.start();
    try {
      for (const pid of redisSet.pids) pin(pid, SERVER_CORE);
      for (const rateLimits of ['off', 'on'] as const) {
        const server = new ServerProcess(entry, { BENCH_REDIS_URL: redisSet.url, BENCH_RATE_LIMITS: rateLimits });
        try {
          await server.ready;
          const flowsPerSec = async (workload: RunRequest['workload']): Promise<number> => {
            const pids: Record<string, number> = {
              server: server.pid,
              loadgen: loadgen.pid,
              orchestrator: process.pid,
            };
            redisSet.pids.forEach((pid, i) => {
              pids[`redis${i}`] = pid;
            });
            const result = await loadgen.run({
              origin: server.origin,
              workload,
              params: entry.params,
              connections: settings.connections,
              warmupMs: settings.warmupMs,
              durationMs: settings.durationMs,
              pids,
            });
            checkRow(`redis/${topology.name}/${rateLimits}/${workload}`, result);
            return result.opsPerSec;
          };
          const row: RedisCostRow = {
            topology: topology.name,
            rateLimits,
            ciba: {
              flowsPerSec: 0,
              perFlow: await countFlows(
                server.origin,
                entry.params,
                'backend-flow',
                redisSet.nodes,
                settings.redisFlows,
              ),
            },
            code: {
              flowsPerSec: 0,
              perFlow: await countFlows(
                server.origin,
                entry.params,
                'frontend-flow',
                redisSet.nodes,
                settings.redisFlows,
              ),
            },
          };
          row.ciba.flowsPerSec = await flowsPerSec('backend-flow');
          row.code.flowsPerSec = await flowsPerSec('frontend-flow');
          if (rateLimits === 'off')
            row.pending = {
              count: settings.redisPending,
              ...(await pendingMemory(server.origin, entry.params, redisSet.nodes, settings.redisPending)),
            };
          redisCosts.push(row);
          log(
            `redis ${topology.name}, rate limits ${rateLimits}: CIBA ${fmt(row.ciba.flowsPerSec)}/s ${fmt(row.ciba.perFlow.roundTrips, 1)} RT, ` +
              `code ${fmt(row.code.flowsPerSec)}/s ${fmt(row.code.perFlow.roundTrips, 1)} RT` +
              (row.pending ? `, ${fmt(row.pending.bytes)} B per pending auth_req_id` : ''),
          );
        } finally {
          await server.stop();
        }
      }
    } finally {
      await redisSet.stop();
    }
  }
}

async function shutdown(): Promise<void> {
  await Promise.all([...servers.values()].map((s) => s.stop()));
  loadgen?.stop();
  speed?.stop();
  await redis?.destroy();
  redis = undefined;
}

process.on('SIGINT', () => {
  void shutdown().finally(() => process.exit(130));
});

if (args.report) {
  // Re-render a run saved with --json (same numbers, the current report code).
  const saved = JSON.parse(readFileSync(args.report, 'utf8')) as {
    settings: Partial<typeof settings>;
    machine: Machine;
    measured: Measured[];
    pendingResult?: PendingResult;
    soakResult?: SoakResult;
    redisCosts?: RedisCostRow[];
    unavailable?: Record<string, string>;
  };
  Object.assign(settings, saved.settings);
  for (const [id, why] of Object.entries(saved.unavailable ?? {})) unavailable.set(id, why);
  measured.push(...saved.measured);
  pendingResult = saved.pendingResult;
  soakResult = saved.soakResult;
  redisCosts = saved.redisCosts ?? [];
  process.stdout.write(`${report(saved.machine)}\n`);
  process.exit(0);
}

try {
  await main();
} catch (error) {
  harnessFailures.push(error instanceof Error ? error.message : String(error));
}
judgeSpeed();
await shutdown();
const text = report(thisMachine());
process.stdout.write(`\n${text}\n`);
if (args.json) {
  writeFileSync(
    args.json,
    JSON.stringify(
      {
        settings,
        machine: thisMachine(),
        measured,
        pendingResult,
        soakResult,
        redisCosts,
        unavailable: Object.fromEntries(unavailable),
      },
      null,
      2,
    ),
  );
}
log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
if (harnessFailures.length) {
  process.stderr.write(
    `\nHARNESS FAILURE (the bench itself broke, not a missed target):\n${[...new Set(harnessFailures)].map((f) => `  - ${f}`).join('\n')}\n`,
  );
  process.exit(1);
}
