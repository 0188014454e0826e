/**
 * The `redis` suite (issue 17): what one flow costs Redis, on one node and on a Redis Cluster of three masters,
 * with the gateway's rate limits off and on:
 * - round trips per CIBA flow (bc-authorize + the approved poll) and per code flow (authorize + token): the reads
 *   every master made of its clients' sockets (INFO stats `total_reads_processed`, less the counter's own INFO), so
 *   the commands a client sends together (node-redis writes those of one tick at once: a pipeline, a WAIT behind its
 *   write, a MULTI block) count once, as the one wait for an answer they cost. On a cluster, batches sent side by
 *   side to several masters count once per master: an upper bound of the waits. Beside them, the commands clients
 *   sent, counted with MONITOR (commands run by scripts, `[0 lua]`, are not the client's), and those of the
 *   rate-limit counters;
 * - Redis memory per pending auth_req_id (INFO `used_memory` over every master, before and after creating
 *   them), and per pending auth_req_id once polled (its poll state);
 * - flows per second of the same servers, from the load generator (bench/run.ts).
 */
import { createConnection, type Socket } from 'node:net';
import {
  Connection,
  Recorder,
  WORKLOADS,
  CIBA_GRANT,
  basicAuthorization,
  type ServerParams,
  type WorkloadId,
} from './workloads.js';
import { BENCH_CLIENT_ID, BENCH_CLIENT_SECRET, BENCH_PHONE, ISSUER_PATH } from './servers/common.js';
import { fmt, table } from './report.js';

/** host:port of a Redis node. */
export interface RedisNode {
  port: number;
}

export interface CommandCount {
  /** Batches of commands the masters read (see the top): the round trips. */
  roundTrips: number;
  /** Of the commands, those of the rate-limit counters (their keys are under the store's prefix + `rl:`). */
  rateLimitCommands?: number;
  commands: number;
  byCommand: Record<string, number>;
}

/** The bench server's RedisStore prefix (the default) and its rate-limit counters' one. */
const RATE_LIMIT_KEYS = 'netauth:rl:';

export interface RedisCostRow {
  topology: string;
  rateLimits: 'off' | 'on';
  ciba: { flowsPerSec: number; perFlow: CommandCount };
  code: { flowsPerSec: number; perFlow: CommandCount };
  /** Bytes of Redis memory per pending auth_req_id, and per one polled once; measured with rate limits off. */
  pending?: { count: number; bytes: number; polledBytes: number };
}

/** One raw RESP connection to a node: enough for INFO, CONFIG and MONITOR without a client library's own traffic. */
class Raw {
  private buffer = '';
  private readonly socket: Socket;
  private readonly waiting: Array<(reply: string) => void> = [];
  onLine: ((line: string) => void) | undefined;

  constructor(node: RedisNode) {
    this.socket = createConnection({ host: '127.0.0.1', port: node.port });
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => this.read(chunk));
  }

  /** A command whose reply is one simple or bulk string (INFO, CONFIG RESETSTAT, MONITOR's +OK). */
  ask(...args: string[]): Promise<string> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    });
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      if (this.buffer.startsWith('$')) {
        const header = this.buffer.indexOf('\r\n');
        if (header === -1) return;
        const length = Number(this.buffer.slice(1, header));
        if (this.buffer.length < header + 2 + length + 2) return;
        const body = this.buffer.slice(header + 2, header + 2 + length);
        this.buffer = this.buffer.slice(header + 2 + length + 2);
        this.waiting.shift()?.(body);
        continue;
      }
      const end = this.buffer.indexOf('\r\n');
      if (end === -1) return;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const waiter = this.waiting.shift();
      if (waiter) waiter(line);
      else this.onLine?.(line);
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** INFO `used_memory` summed over the nodes. */
export async function usedMemory(nodes: readonly RedisNode[]): Promise<number> {
  let total = 0;
  for (const node of nodes) {
    const raw = new Raw(node);
    total += Number(/used_memory:(\d+)/.exec(await raw.ask('INFO', 'memory'))?.[1] ?? NaN);
    raw.close();
  }
  return total;
}

/** INFO stats `total_reads_processed` summed over the nodes (one connection each): one per batch read from a client. */
async function readsProcessed(connections: readonly Raw[]): Promise<number> {
  let total = 0;
  for (const raw of connections)
    total += Number(/total_reads_processed:(\d+)/.exec(await raw.ask('INFO', 'stats'))?.[1] ?? NaN);
  return total;
}

/** Counts what clients send to the nodes while it runs: the batches they read, and the commands (MONITOR). */
export class CommandCounter {
  private readonly byCommand = new Map<string, number>();
  private rateLimitCommands = 0;
  private commands = 0;

  private constructor(
    private readonly monitors: Raw[],
    /** One connection per node for INFO, open while counting (a connection's close is a read too). */
    private readonly stats: Raw[],
    private readonly readsBefore: number,
  ) {}

  static async start(nodes: readonly RedisNode[]): Promise<CommandCounter> {
    const monitors = nodes.map((node) => new Raw(node));
    for (const monitor of monitors) await monitor.ask('MONITOR');
    const stats = nodes.map((node) => new Raw(node));
    const counter = new CommandCounter(monitors, stats, await readsProcessed(stats));
    for (const monitor of monitors) monitor.onLine = (line) => counter.count(line);
    return counter;
  }

  private count(line: string): void {
    // +1700000000.123456 [0 127.0.0.1:52311] "EVALSHA" "…" "1" "key"
    const match = /^\+[\d.]+ \[\d+ ([^\]]+)\] "([^"]+)"(?: "([^"]*)")?(?: "[^"]*" "([^"]*)")?/.exec(line);
    if (!match || match[1] === 'lua') return;
    const [, , name, key, scriptKey] = match as unknown as [
      string,
      string,
      string,
      string | undefined,
      string | undefined,
    ];
    const command = name.toLowerCase();
    // The counter's own INFO, which MONITOR shows too.
    if (command === 'info') return;
    const firstKey = command === 'evalsha' || command === 'eval' ? scriptKey : key;
    this.commands++;
    this.byCommand.set(command, (this.byCommand.get(command) ?? 0) + 1);
    if (firstKey?.startsWith(RATE_LIMIT_KEYS)) this.rateLimitCommands++;
  }

  /** Stops counting; the counts divided by `flows`. */
  async stop(flows: number): Promise<CommandCount> {
    // MONITOR lines of the last commands may still be on their way.
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Each INFO of readsProcessed is one read of its node, the one at the start included.
    const reads = (await readsProcessed(this.stats)) - this.readsBefore - this.stats.length;
    for (const raw of [...this.monitors, ...this.stats]) raw.close();
    const byCommand: Record<string, number> = {};
    for (const [name, n] of [...this.byCommand].sort((a, b) => b[1] - a[1])) byCommand[name] = n / flows;
    return {
      roundTrips: reads / flows,
      rateLimitCommands: this.rateLimitCommands / flows,
      commands: this.commands / flows,
      byCommand,
    };
  }
}

/** `flows` operations of a workload, one after another on one connection, counted on the nodes. */
export async function countFlows(
  origin: string,
  params: ServerParams,
  workload: WorkloadId,
  nodes: readonly RedisNode[],
  flows: number,
): Promise<CommandCount> {
  const recorder = new Recorder();
  const conn = new Connection(origin, recorder);
  const run = WORKLOADS[workload];
  const state = await run.prepare([conn], params);
  try {
    // Warm: scripts loaded, connections made, data-loss markers in place.
    for (let i = 0; i < 5; i++) await run.operation(conn, params, state, i);
    const counter = await CommandCounter.start(nodes);
    for (let i = 0; i < flows; i++) await run.operation(conn, params, state, i);
    return await counter.stop(flows);
  } finally {
    await conn.close();
  }
}

const FORM = {
  authorization: basicAuthorization(BENCH_CLIENT_ID, BENCH_CLIENT_SECRET),
  'content-type': 'application/x-www-form-urlencoded',
};

/**
 * Redis memory per pending auth_req_id: `count` bc-authorize requests for a scope whose consent is not on
 * record (they stay pending), then one poll of each (`authorization_pending`, which stores its poll state).
 */
export async function pendingMemory(
  origin: string,
  params: ServerParams,
  nodes: readonly RedisNode[],
  count: number,
): Promise<{ bytes: number; polledBytes: number }> {
  if (!params.pendingScope) throw new Error('this server has no pendingScope');
  const conns = Array.from({ length: 8 }, () => new Connection(origin, new Recorder()));
  const ids: string[] = [];
  const before = await usedMemory(nodes);
  await Promise.all(
    conns.map(async (conn, c) => {
      for (let i = c; i < count; i += conns.length) {
        const body = new URLSearchParams({ login_hint: `tel:${BENCH_PHONE}`, scope: params.pendingScope! }).toString();
        const reply = await conn.post('bc-authorize', `${ISSUER_PATH}/bc-authorize`, FORM, body);
        if (reply.status !== 200) throw new Error(`bc-authorize: HTTP ${reply.status} ${reply.body.slice(0, 200)}`);
        ids.push((JSON.parse(reply.body) as { auth_req_id: string }).auth_req_id);
      }
    }),
  );
  const created = await usedMemory(nodes);
  await Promise.all(
    conns.map(async (conn, c) => {
      for (let i = c; i < ids.length; i += conns.length) {
        const body = new URLSearchParams({ grant_type: CIBA_GRANT, auth_req_id: ids[i]! }).toString();
        const reply = await conn.post('token', `${ISSUER_PATH}/token`, FORM, body);
        if (!reply.body.includes('authorization_pending'))
          throw new Error(`poll: HTTP ${reply.status} ${reply.body.slice(0, 200)}`);
      }
    }),
  );
  const polled = await usedMemory(nodes);
  await Promise.all(conns.map((c) => c.close()));
  return { bytes: (created - before) / ids.length, polledBytes: (polled - before) / ids.length };
}

/** The part of a count worth printing: the commands sent, most first. */
function breakdown(count: CommandCount): string {
  return Object.entries(count.byCommand)
    .map(([name, n]) => `${name} ${fmt(n, n % 1 === 0 ? 0 : 2)}`)
    .join(', ');
}

/** The rate-limit counters' share of a count, when it has one. */
function limitsPart(count: CommandCount): string {
  return count.rateLimitCommands ? `; rate-limit commands ${fmt(count.rateLimitCommands, 2)}` : '';
}

/**
 * Round trips per CIBA flow and per code flow with the default rate limits on (issue 46), on one node, where a
 * batch is one wait (a cluster's count is an upper bound, printed beside); memory per pending auth_req_id.
 */
export const REDIS_TARGETS = { cibaRoundTrips: 3, codeRoundTrips: 4, pendingBytes: 1024 };

export function redisCostReport(rows: readonly RedisCostRow[]): string {
  const out = [
    '(5) Redis costs per flow: round trips (RT) = batches of commands the masters read (INFO total_reads_processed; commands sent',
    '    together count once; on a cluster once per master), commands (MONITOR on every master), and Redis memory (INFO used_memory)',
    '    per pending auth_req_id; rate limits "on" = every default limit, with budgets no flow reaches',
    table(
      [
        'topology',
        'rate limits',
        'CIBA flows/s',
        'RT/CIBA flow',
        'code flows/s',
        'RT/code flow',
        'B/pending id',
        'B/pending, polled',
      ],
      rows.map((r) => [
        r.topology,
        r.rateLimits,
        fmt(r.ciba.flowsPerSec),
        fmt(r.ciba.perFlow.roundTrips, 1),
        fmt(r.code.flowsPerSec),
        fmt(r.code.perFlow.roundTrips, 1),
        r.pending ? fmt(r.pending.bytes) : '',
        r.pending ? fmt(r.pending.polledBytes) : '',
      ]),
    ),
    '    commands per flow (and those of the rate-limit counters, keys under netauth:rl:):',
    ...rows.flatMap((r) => [
      `      ${r.topology}, rate limits ${r.rateLimits}: CIBA ${breakdown(r.ciba.perFlow)}${limitsPart(r.ciba.perFlow)}`,
      `      ${' '.repeat(r.topology.length)}                 code ${breakdown(r.code.perFlow)}${limitsPart(r.code.perFlow)}`,
    ]),
  ];
  return out.join('\n');
}

/** The issue's Redis targets, as target lines. */
export function redisTargetLines(rows: readonly RedisCostRow[]): string[] {
  const { cibaRoundTrips: ciba, codeRoundTrips: code } = REDIS_TARGETS;
  if (rows.length === 0)
    return [
      `  n/a   Redis round trips per CIBA flow <= ${ciba}, per code flow <= ${code}, default rate limits on  (redis suite not run)`,
    ];
  const lines: string[] = [];
  for (const row of rows.filter((r) => r.rateLimits === 'on')) {
    const { ciba: c, code: k } = { ciba: row.ciba.perFlow, code: row.code.perFlow };
    // Two decimals: a client's own limit is taken ahead in chunks, so its refills add a fraction per flow.
    const text =
      `Redis round trips with default rate limits on (${row.topology}): CIBA flow ${fmt(c.roundTrips, 2)} <= ${ciba}, ` +
      `code flow ${fmt(k.roundTrips, 2)} <= ${code}`;
    if (row.topology !== 'single node') {
      lines.push(`  info  ${text} (an upper bound: batches sent side by side to several masters count once each)`);
      continue;
    }
    const pass = c.roundTrips <= ciba && k.roundTrips <= code;
    lines.push(`  ${pass ? 'PASS' : 'MISS'}  ${text}`);
  }
  for (const row of rows.filter((r) => r.pending)) {
    const value = row.pending!.bytes;
    lines.push(
      `  ${value <= REDIS_TARGETS.pendingBytes ? 'PASS' : 'MISS'}  Redis memory per pending auth_req_id <= 1 KB (${row.topology}): ${fmt(value)} B`,
    );
  }
  return lines;
}
