/**
 * The `redis` suite (issue 17): what one flow costs Redis, on one node and on a Redis Cluster of three masters,
 * with the gateway's rate limits off and on:
 * - round trips per CIBA flow (bc-authorize + the approved poll) and per code flow (authorize + token), counted
 *   with MONITOR on every master: each command a client sends is one round trip, except the commands inside a
 *   MULTI/EXEC block (one round trip for the block), a WAIT sent right behind a write and a PTTL right behind a
 *   GET of the same key (both pipelined with the command before: rate-limiter-flexible reads a counter with
 *   GET and PTTL in one pipeline); commands run by scripts (`[0 lua]`) are not the client's;
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
  roundTrips: number;
  /** Of the round trips, those of the rate-limit counters (their keys are under the store's prefix + `rl:`). */
  rateLimitRoundTrips?: number;
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

/** Counts the commands clients send to the nodes while it runs (MONITOR), as round trips (see the top). */
export class CommandCounter {
  private readonly byCommand = new Map<string, number>();
  private readonly inMulti = new Set<string>();
  /** Each client's last command and key, to spot a pipelined PTTL. */
  private readonly last = new Map<string, string>();
  private roundTrips = 0;
  private rateLimitRoundTrips = 0;
  private commands = 0;

  private constructor(private readonly monitors: Raw[]) {}

  static async start(nodes: readonly RedisNode[]): Promise<CommandCounter> {
    const monitors = nodes.map((node) => new Raw(node));
    const counter = new CommandCounter(monitors);
    for (const monitor of monitors) {
      await monitor.ask('MONITOR');
      monitor.onLine = (line) => counter.count(line);
    }
    return counter;
  }

  private count(line: string): void {
    // +1700000000.123456 [0 127.0.0.1:52311] "EVALSHA" "…" "1" "key"
    const match = /^\+[\d.]+ \[\d+ ([^\]]+)\] "([^"]+)"(?: "([^"]*)")?(?: "[^"]*" "([^"]*)")?/.exec(line);
    if (!match || match[1] === 'lua') return;
    const [, client, name, key, scriptKey] = match as unknown as [
      string,
      string,
      string,
      string | undefined,
      string | undefined,
    ];
    const command = name.toLowerCase();
    const firstKey = command === 'evalsha' || command === 'eval' ? scriptKey : key;
    const before = this.roundTrips;
    this.commands++;
    this.byCommand.set(command, (this.byCommand.get(command) ?? 0) + 1);
    const previous = this.last.get(client);
    this.last.set(client, `${command} ${key ?? ''}`);
    if (command === 'pttl' && previous === `get ${key ?? ''}`) return;
    if (command === 'multi') {
      this.inMulti.add(client);
      this.roundTrips++;
    } else if (command === 'exec' || command === 'discard') {
      this.inMulti.delete(client);
    } else if (!this.inMulti.has(client) && command !== 'wait') {
      this.roundTrips++;
    }
    if (this.roundTrips > before && firstKey?.startsWith(RATE_LIMIT_KEYS)) this.rateLimitRoundTrips++;
  }

  /** Stops counting; the counts divided by `flows`. */
  async stop(flows: number): Promise<CommandCount> {
    // MONITOR lines of the last commands may still be on their way.
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const monitor of this.monitors) monitor.close();
    const byCommand: Record<string, number> = {};
    for (const [name, n] of [...this.byCommand].sort((a, b) => b[1] - a[1])) byCommand[name] = n / flows;
    return {
      roundTrips: this.roundTrips / flows,
      rateLimitRoundTrips: this.rateLimitRoundTrips / flows,
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
  return count.rateLimitRoundTrips ? `; rate-limit round trips ${fmt(count.rateLimitRoundTrips, 2)}` : '';
}

/** Round trips per CIBA flow with the default rate limits on; memory per pending auth_req_id. */
export const REDIS_TARGETS = { cibaRoundTrips: 4, pendingBytes: 1024 };

export function redisCostReport(rows: readonly RedisCostRow[]): string {
  const out = [
    '(5) Redis costs per flow (MONITOR on every master; a MULTI block, a pipelined WAIT or PTTL count with their command) and Redis memory',
    '    (INFO used_memory) per pending auth_req_id; rate limits "on" = every default limit, with budgets no flow reaches',
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
    '    commands per flow (and the round trips of the rate-limit counters, keys under netauth:rl:):',
    ...rows.flatMap((r) => [
      `      ${r.topology}, rate limits ${r.rateLimits}: CIBA ${breakdown(r.ciba.perFlow)}${limitsPart(r.ciba.perFlow)}`,
      `      ${' '.repeat(r.topology.length)}                 code ${breakdown(r.code.perFlow)}${limitsPart(r.code.perFlow)}`,
    ]),
  ];
  return out.join('\n');
}

/** The issue's Redis targets, as target lines. */
export function redisTargetLines(rows: readonly RedisCostRow[]): string[] {
  if (rows.length === 0)
    return ['  n/a   Redis round trips per CIBA flow <= 4 with default rate limits on  (redis suite not run)'];
  const lines: string[] = [];
  for (const row of rows.filter((r) => r.rateLimits === 'on')) {
    const value = row.ciba.perFlow.roundTrips;
    const limits = row.ciba.perFlow.rateLimitRoundTrips;
    // Two decimals: a client's own limit is taken ahead in chunks, so its refills add a fraction per flow.
    const split = limits === undefined ? '' : ` (store ${fmt(value - limits, 2)}, rate limits ${fmt(limits, 2)})`;
    lines.push(
      `  ${value <= REDIS_TARGETS.cibaRoundTrips ? 'PASS' : 'MISS'}  Redis round trips per CIBA flow <= ${REDIS_TARGETS.cibaRoundTrips} with default rate limits on (${row.topology}): ${fmt(value, 2)}${split}`,
    );
  }
  for (const row of rows.filter((r) => r.pending)) {
    const value = row.pending!.bytes;
    lines.push(
      `  ${value <= REDIS_TARGETS.pendingBytes ? 'PASS' : 'MISS'}  Redis memory per pending auth_req_id <= 1 KB (${row.topology}): ${fmt(value)} B`,
    );
  }
  return lines;
}
