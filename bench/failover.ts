/**
 * `npx tsx bench/failover.ts`: how long a Redis failover costs the gateway (issue 17; docs/redis-store.md records
 * the numbers). Two gateway processes (test/helpers/gateway-main.ts) run CIBA flows in a closed loop, 8 at a
 * time, crossing instances; the master of one shard is killed (SIGKILL) and every answer is timed. Printed per
 * set-up: when the 503s started and ended after the kill, how many there were, how many flows succeeded
 * meanwhile, and how flows ended: "answer lost" is a poll answered 503 whose request Redis had consumed and
 * whose token it had stored (the retry gets invalid_grant; nothing was burnt or issued twice), "failed" anything
 * else without a token (an approved request lost: none expected). Throughput (completed flows per second) is
 * printed for the 2 s before the kill and for 5 s ending 10 s after it, the dead node never restarted.
 *
 * Set-ups: a Redis Cluster of 3 masters with a replica each (cluster-node-timeout 1000 and 2000 ms, with
 * cluster-require-full-coverage yes, the default, and no), and Sentinel (one master, one replica, one Sentinel,
 * down-after-milliseconds 1000 and 500), and a master whose replica is killed (no failover). `--only cluster`,
 * `--only sentinel` or `--only replica` runs one kind; `--quick` one set-up of each (node-timeout 1000 with full
 * coverage no, down-after-milliseconds 1000).
 *
 * `--fault` picks what happens to the master (issue 47's grey failures): `kill` (SIGKILL, the default, never
 * restarted), `hang` (SIGSTOP for 20 s, then SIGCONT), `slow` (`CLIENT PAUSE 2000 ALL` again and again for 12 s:
 * every reply late past the store's timeout, no failover), `sleep` (`DEBUG SLEEP 2` again and again for 12 s: the
 * master stops answering altogether, and may be failed over) or `pause` (one `CLIENT PAUSE 3000`). A flow whose poll got 503 and then its token was a
 * retry the idempotent redemption answered; "answer lost" stays a 503 followed by invalid_grant.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisCluster, ask } from '../test/helpers/redis-cluster.js';
import { RedisSentinelSet, SENTINEL_MASTER_NAME } from '../test/helpers/redis-sentinel.js';
import { RedisServer } from '../test/helpers/redis-server.js';
import { startGatewayProcess, stopGatewayProcesses, type GatewayProcess } from '../test/helpers/gateway-process.js';
import { bcAuthorizeOn, pollOn } from '../test/helpers/fleet.js';
import { SIM_SWAP } from '../test/helpers/gateway.js';
import { fmt, table } from './report.js';

const { values: args } = parseArgs({
  options: { only: { type: 'string' }, quick: { type: 'boolean' }, fault: { type: 'string', default: 'kill' } },
});
if (!['kill', 'hang', 'slow', 'sleep', 'pause'].includes(args.fault!))
  throw new TypeError('--fault must be kill, hang, slow, sleep or pause');
const HANG_MS = 20_000;
const SLOW_MS = 12_000;

/** Makes `server` fail as `--fault` says; resolves once the fault has started (a hang or slowness ends by itself). */
async function fault(server: RedisServer): Promise<void> {
  if (args.fault === 'kill') return server.stop();
  if (args.fault === 'hang') {
    process.kill(server.pid!, 'SIGSTOP');
    setTimeout(() => process.kill(server.pid!, 'SIGCONT'), HANG_MS).unref();
    return;
  }
  // pause: one CLIENT PAUSE 3000; slow: CLIENT PAUSE 2000 again and again for 12 s; sleep: DEBUG SLEEP 2 likewise.
  if (args.fault === 'pause') {
    await ask(server, ['CLIENT', 'PAUSE', '3000', 'ALL']);
    return;
  }
  const until = performance.now() + SLOW_MS;
  const slowly = args.fault === 'sleep' ? ['DEBUG', 'SLEEP', '2'] : ['CLIENT', 'PAUSE', '2000', 'ALL'];
  void (async () => {
    while (performance.now() < until) {
      // DEBUG SLEEP answers once it is over; CLIENT PAUSE at once.
      await ask(server, slowly).catch(() => {});
      if (args.fault === 'slow') await sleep(2050);
      else await sleep(50);
    }
  })();
}

/** Until the fault is over: a hang or slowness lasts its time (a kill ends at once). */
function faultOver(): Promise<void> {
  return sleep(
    args.fault === 'hang'
      ? HANG_MS
      : args.fault === 'slow' || args.fault === 'sleep'
        ? SLOW_MS
        : args.fault === 'pause'
          ? 3000
          : 0,
  );
}

interface Answer {
  at: number;
  status: number;
  /** How long the request took (ms). */
  took: number;
}

interface Outcome {
  setup: string;
  firstError: number | undefined;
  lastError: number | undefined;
  errors: number;
  okDuring: number;
  flows: number;
  /** Flows whose poll was answered 503 and then invalid_grant: consumed with its token stored, the answer lost. */
  answerLost: number;
  /** Flows that ended with anything else but a token. */
  failed: number;
  /** The longest request after the kill (ms). */
  longest: number;
  /** When the set-up reported healthy again (a replica promoted, or the fault over), after the kill (ms). */
  healed: number;
  /** Completed flows per second in the 2 s before the kill, and in the 5 s ending 10 s after it. */
  before: number;
  after: number;
}

/** CIBA flows in a closed loop on `workers` connections, every answer timed, until `stop()`. */
function load(a: GatewayProcess, b: GatewayProcess, workers = 8) {
  const answers: Answer[] = [];
  let flows = 0;
  let answerLost = 0;
  let failed = 0;
  const completed: number[] = [];
  let running = true;
  const record = (res: Response, started: number) => {
    const at = performance.now();
    answers.push({ at, status: res.status, took: at - started });
  };
  const loops = Array.from({ length: workers }, async (_, i) => {
    const [front, back] = i % 2 === 0 ? [a, b] : [b, a];
    while (running) {
      let id: string | undefined;
      while (running && id === undefined) {
        const started = performance.now();
        const res = await bcAuthorizeOn(front, 'tel:+34600000001', SIM_SWAP);
        record(res, started);
        if (res.status === 200) id = ((await res.json()) as { auth_req_id: string }).auth_req_id;
        else await sleep(20);
      }
      let unanswered = false;
      while (id !== undefined) {
        const started = performance.now();
        const res = await pollOn(back, id);
        record(res, started);
        if (res.status === 503) {
          unanswered = true;
          await sleep(20);
          continue;
        }
        const body = (await res.json()) as { access_token?: string; error?: string };
        flows++;
        completed.push(performance.now());
        if (body.access_token === undefined) {
          if (unanswered && body.error === 'invalid_grant') answerLost++;
          else failed++;
        }
        id = undefined;
      }
    }
  });
  return {
    answers,
    counts: () => ({ flows, answerLost, failed }),
    /** Completed flows per second between `from` and `to` (ms, performance.now()). */
    rate: (from: number, to: number) => (completed.filter((t) => t >= from && t < to).length * 1000) / (to - from),
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

async function measure(
  setup: string,
  env: { a: Record<string, string>; b: Record<string, string> },
  kill: () => Promise<void>,
  healed: () => Promise<void>,
): Promise<Outcome> {
  const common = { NETAUTH_COOKIE_SECRET: randomBytes(24).toString('base64url'), NETAUTH_RATE_LIMITS: 'off' };
  const [a, b] = await Promise.all([
    startGatewayProcess('A', { ...common, ...env.a }),
    startGatewayProcess('B', { ...common, ...env.b }),
  ]);
  try {
    const running = load(a, b);
    await sleep(2000);
    const killedAt = performance.now();
    await kill();
    await healed();
    const healedAt = performance.now();
    // Load goes on until 10 s after the kill (at least 3 s after the set-up reports healthy), the node still dead.
    await sleep(Math.max(3000, killedAt + 10_000 - performance.now()));
    const longest = Math.max(...running.answers.filter((x) => x.at >= killedAt).map((x) => x.took));
    await running.stop();
    const after = running.answers.filter((x) => x.at >= killedAt);
    const errors = after.filter((x) => x.status >= 500);
    const firstError = errors[0]?.at;
    const lastError = errors.at(-1)?.at;
    const okDuring =
      firstError === undefined
        ? 0
        : after.filter((x) => x.status === 200 && x.at >= firstError && x.at <= lastError!).length;
    return {
      setup,
      firstError: firstError === undefined ? undefined : firstError - killedAt,
      lastError: lastError === undefined ? undefined : lastError - killedAt,
      errors: errors.length,
      okDuring,
      longest,
      healed: healedAt - killedAt,
      ...running.counts(),
      before: running.rate(killedAt - 2000, killedAt),
      after: running.rate(killedAt + 5000, killedAt + 10_000),
    };
  } finally {
    await stopGatewayProcesses();
  }
}

async function cluster(nodeTimeout: number, fullCoverage: boolean): Promise<Outcome> {
  const set = await RedisCluster.start({ masters: 3, replicas: 1, nodeTimeout });
  try {
    if (!fullCoverage)
      for (const node of set.nodes) await ask(node, ['CONFIG', 'SET', 'cluster-require-full-coverage', 'no']);
    // The master of slot 0 (the tag {DLH}'s): first in a client's list of masters, the worst one to lose.
    const doomed = await set.masterOf('{DLH}');
    return await measure(
      `${args.fault}: cluster 3+3, node-timeout ${nodeTimeout} ms, full coverage ${fullCoverage ? 'yes' : 'no'}`,
      {
        a: { REDIS_URL: set.nodes[0] === doomed ? set.nodes[1]!.url : set.nodes[0]!.url },
        b: { REDIS_CLUSTER: set.nodes.map((n) => n.url).join(',') },
      },
      () => fault(doomed),
      async () => {
        await faultOver();
        await set.waitUntilHealthy(30_000);
      },
    );
  } finally {
    await set.destroy();
  }
}

/** One master and one replica, the replica killed: no failover, the writes go on without it. */
async function replicaLoss(): Promise<Outcome> {
  const master = await RedisServer.start({ args: () => ['--repl-diskless-sync-delay', '0'] });
  const replica = await RedisServer.start({ args: () => ['--replicaof', '127.0.0.1', String(master.port)] });
  try {
    while (!/state=online/.test(String(await ask(master, ['INFO', 'replication'])))) await sleep(25);
    const env = { REDIS_URL: master.url };
    const setup = 'one master, its replica killed (no failover)';
    return await measure(
      setup,
      { a: env, b: env },
      () => replica.stop(),
      async () => {},
    );
  } finally {
    await replica.destroy();
    await master.destroy();
  }
}

async function sentinel(downAfter: number): Promise<Outcome> {
  const set = await RedisSentinelSet.start({ downAfter });
  try {
    const env = { REDIS_SENTINEL: `${SENTINEL_MASTER_NAME}@127.0.0.1:${set.sentinel.port}` };
    let old: Awaited<ReturnType<typeof set.killMaster>> | undefined;
    return await measure(
      `${args.fault}: sentinel, down-after-milliseconds ${downAfter}`,
      { a: env, b: env },
      async () => {
        old = await set.currentMaster();
        await fault(old);
      },
      async () => {
        // A slow or paused master may be failed over, or not (a pause shorter than down-after-milliseconds).
        if (args.fault === 'kill' || args.fault === 'hang') await set.waitForFailover(old!);
        await faultOver();
      },
    );
  } finally {
    await set.destroy();
  }
}

const outcomes: Outcome[] = [];
if (args.only === undefined || args.only === 'cluster') {
  const setups = args.quick
    ? ([[1000, false]] as const)
    : ([
        [1000, true],
        [1000, false],
        [2000, true],
      ] as const);
  for (const [timeout, coverage] of setups) {
    outcomes.push(await cluster(timeout, coverage));
    process.stderr.write(`[failover] ${outcomes.at(-1)!.setup} done\n`);
  }
}
if ((args.only === undefined || args.only === 'replica') && args.fault === 'kill') outcomes.push(await replicaLoss());
if (args.only !== 'cluster' && args.only !== 'replica') {
  for (const downAfter of args.quick ? [1000] : [1000, 500]) outcomes.push(await sentinel(downAfter));
}

const ms = (value: number | undefined) => (value === undefined ? '-' : fmt(value));
process.stdout.write(
  `${table(
    [
      'set-up',
      'first 5xx after kill (ms)',
      'healed (ms)',
      'last 5xx (ms)',
      '5xx window (ms)',
      '5xx answers',
      '200s inside window',
      'longest request (ms)',
      'flows/s before',
      'flows/s 5-10 s after',
      'flows',
      'answer lost',
      'failed',
    ],
    outcomes.map((o) => [
      o.setup,
      ms(o.firstError),
      fmt(o.healed),
      ms(o.lastError),
      o.firstError === undefined ? '-' : fmt(o.lastError! - o.firstError),
      fmt(o.errors),
      fmt(o.okDuring),
      fmt(o.longest),
      fmt(o.before),
      fmt(o.after),
      fmt(o.flows),
      fmt(o.answerLost),
      fmt(o.failed),
    ]),
  )}\n`,
);
