import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSentinel } from '../helpers/node-redis.js';
import { RedisStore, type TopologyFault } from '../../lib/stores/redis.js';
import { StoreUnavailableError } from '../../lib/stores/store.js';
import { randomTag, taggedId } from '../../lib/crypto.js';
import { freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import { RedisSentinelSet, SENTINEL_MASTER_NAME } from '../helpers/redis-sentinel.js';
import { ask } from '../helpers/redis-cluster.js';

/**
 * Issue 47: a hung master behind Sentinel (SIGSTOP), failed over, then let go (SIGCONT): it comes back believing it
 * is master until Sentinel demotes it. The store follows Sentinel's view: it writes to the promoted replica, and
 * nothing it writes after the failover reaches the returning old master as a client command. (While the master
 * still hangs, node-redis' Sentinel client may keep its commands on it: one run saw no write succeed 10 s after the
 * switch. So the node is let go right after the failover here, and that wait is not asserted.)
 */

const skip = skipRedisTests('the Redis Sentinel hang tests');

/** node-redis' Sentinel client, its errors dropped (a hung node makes many), connected. */
async function connectedSentinel(
  set: RedisSentinelSet,
  nodeClientOptions?: Parameters<typeof createSentinel>[0]['nodeClientOptions'],
): Promise<ReturnType<typeof createSentinel>> {
  const client = createSentinel({
    name: SENTINEL_MASTER_NAME,
    sentinelRootNodes: set.sentinelRootNodes,
    ...(nodeClientOptions ? { nodeClientOptions } : {}),
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** A Sentinel set (master, replica, one Sentinel) of its own for the describe block that calls this. */
function sentinelSetOfBlock(): () => RedisSentinelSet {
  let set: RedisSentinelSet | undefined;
  beforeAll(async () => {
    requireRedisServer();
    set = await RedisSentinelSet.start();
  }, 30_000);
  afterAll(async () => {
    await set?.destroy();
  });
  return () => set!;
}

/** A client that gives a hung node up quickly and keeps nothing queued for it. */
const QUICK = { disableOfflineQueue: true, socket: { connectTimeout: 1000, reconnectStrategy: () => 100 } };

/** How many times `command` ran on `server` as a client command (INFO commandstats; replication is not counted). */
async function calls(server: Parameters<typeof ask>[0], command: string): Promise<number> {
  const stats = String(await ask(server, ['INFO', 'commandstats']));
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

describe.skipIf(skip)('a hung master behind Sentinel (SIGSTOP, then SIGCONT)', () => {
  const sentinels = sentinelSetOfBlock();

  it('while the master still hangs, writes go to the replica Sentinel promoted', { timeout: 40_000 }, async () => {
    const set = sentinels();
    const client = await connectedSentinel(set, QUICK);
    const store = new RedisStore({ client, prefix: freshPrefix(), timeout: 1000, onTopologyFault: () => {} });
    const old = await set.currentMaster();
    const id = taggedId(randomTag(), 16);
    try {
      await store.open();
      await store.put('code', id, { before: true }, { ttl: 120 });
      // On the replica before the hang (a loaded machine's replica may confirm later than the store waits).
      const replica = old === set.master ? set.replica : set.master;
      await vi.waitFor(
        async () => {
          const offset = (server: typeof old, field: string) =>
            ask(server, ['INFO', 'replication']).then((info) => new RegExp(`${field}:(\\d+)`).exec(String(info))?.[1]);
          expect(await offset(replica, 'slave_repl_offset')).toBe(await offset(old, 'master_repl_offset'));
        },
        { timeout: 5_000, interval: 50 },
      );
      process.kill(old.pid!, 'SIGSTOP');
      try {
        const promoted = await set.waitForFailover(old);
        // A hang costs what a death costs: the store is on the new master within moments, the old one still hung.
        await vi.waitFor(() => store.put('code', taggedId(randomTag(), 16), { hung: true }, { ttl: 120 }), {
          timeout: 8_000,
          interval: 100,
        });
        expect(client.getMasterNode()?.port).toBe(promoted.port);
        expect((await store.get('code', id))?.value).toEqual({ before: true });
      } finally {
        process.kill(old.pid!, 'SIGCONT');
      }
    } finally {
      await store.close();
      await client.destroy();
      await set.waitUntilReady();
    }
  });

  it('the returning old master is never written to: writes go to the promoted replica', {
    timeout: 40_000,
  }, async () => {
    const set = sentinels();
    const client = await connectedSentinel(set, QUICK);
    const store = new RedisStore({ client, prefix: freshPrefix(), timeout: 1000 });
    const old = await set.currentMaster();
    const tag = randomTag();
    try {
      await store.open();
      await store.put('code', taggedId(tag, 16), { before: true }, { ttl: 120 });
      process.kill(old.pid!, 'SIGSTOP');
      let promoted: Awaited<ReturnType<RedisSentinelSet['waitForFailover']>>;
      try {
        // A write while it hangs waits for the store's timeout at most.
        await expect(store.put('code', taggedId(tag, 16), { during: true }, { ttl: 120 })).rejects.toThrow();
        promoted = await set.waitForFailover(old);
      } finally {
        // Back at once, before Sentinel demotes it: the window where it still believes it is master.
        process.kill(old.pid!, 'SIGCONT');
      }
      await vi.waitFor(() => store.put('code', taggedId(tag, 16), { back: true }, { ttl: 120 }), {
        timeout: 10_000,
        interval: 100,
      });
      // Whatever the old master ran on waking (commands sent to it before the failover) is counted now.
      const woke = await calls(old, 'evalsha');
      const ids = Array.from({ length: 20 }, () => taggedId(tag, 16));
      for (const id of ids) await store.put('code', id, { after: true }, { ttl: 120 });
      expect(await calls(old, 'evalsha')).toBe(woke);
      for (const id of ids) expect((await store.get('code', id))?.value).toEqual({ after: true });
      expect(promoted).not.toBe(old);
    } finally {
      await store.close();
      await client.destroy();
      await set.waitUntilReady();
    }
  });
});

/**
 * Issue 47: a write to a master Sentinel no longer names is gone once Sentinel demotes it (the slow-master drill
 * lost a flow so: a bc-authorize answered 200, then unknown). Made without a race: the replica is promoted by hand
 * and the Sentinel told to monitor it instead (no announcement node-redis follows), so the client stays on the old
 * master, which still says it is master and has lost its replica.
 */
describe.skipIf(skip)('a second master: Sentinel names another node than the one the client is on', () => {
  const sentinels = sentinelSetOfBlock();

  it('a Sentinel without its quorum (no failover can happen) is reported, and the store still serves', async () => {
    const set = sentinels();
    const client = await connectedSentinel(set);
    const faults: TopologyFault[] = [];
    const store = new RedisStore({
      client,
      prefix: freshPrefix(),
      onTopologyFault: (fault) => void faults.push(fault),
    });
    // One Sentinel cannot make a quorum of two.
    await ask(set.sentinel, ['SENTINEL', 'SET', SENTINEL_MASTER_NAME, 'quorum', '2']);
    try {
      await store.open();
      expect(faults).toEqual([{ kind: 'sentinel-quorum', node: `127.0.0.1:${set.sentinel.port}` }]);
      expect(store.topologyFaults['sentinel-quorum']).toBe(1);
      await store.put('code', taggedId(randomTag(), 16), { served: true }, { ttl: 60 });
    } finally {
      await ask(set.sentinel, ['SENTINEL', 'SET', SENTINEL_MASTER_NAME, 'quorum', '1']);
      await store.close();
      await client.destroy();
    }
  });

  it('a master Sentinel holds down is refused at once while it is, and served again once Sentinel sees it back', {
    timeout: 20_000,
  }, async () => {
    const set = sentinels();
    const client = await connectedSentinel(set, { disableOfflineQueue: true });
    const store = new RedisStore({ client, prefix: freshPrefix(), timeout: 500, onTopologyFault: () => {} });
    const master = await set.currentMaster();
    const put = () => store.put('code', taggedId(randomTag(), 16), { paused: true }, { ttl: 60 });
    // No failover (one Sentinel cannot make a quorum of two): the master stays, down for Sentinel while it pauses.
    await ask(set.sentinel, ['SENTINEL', 'SET', SENTINEL_MASTER_NAME, 'quorum', '2']);
    try {
      await store.open();
      await ask(master, ['CLIENT', 'PAUSE', '3000', 'ALL']);
      // What it takes now may be gone if Sentinel fails it over: refused before anything is sent.
      await vi.waitFor(() => expect(put()).rejects.toThrow(/is s_down for Sentinel/), {
        timeout: 5_000,
        interval: 100,
      });
      await vi.waitFor(put, { timeout: 10_000, interval: 100 });
    } finally {
      await ask(set.sentinel, ['SENTINEL', 'SET', SENTINEL_MASTER_NAME, 'quorum', '1']);
      await store.close();
      await client.destroy();
    }
  });

  it('the store refuses it (503) instead of answering writes there as done, and reports a second master', async () => {
    const set = sentinels();
    const client = await connectedSentinel(set, QUICK);
    const faults: TopologyFault[] = [];
    const store = new RedisStore({
      client,
      prefix: freshPrefix(),
      timeout: 1000,
      onTopologyFault: (fault) => void faults.push(fault),
      // A loaded machine's replica may take longer than the default 100 ms: the store would stop waiting for it.
      replicaWait: 500,
    });
    const tag = randomTag();
    const pending = taggedId(tag, 16);
    try {
      await store.open();
      await store.put('backchannel', pending, { pending: true }, { ttl: 120 });
      const old = await set.currentMaster();
      const other = old === set.master ? set.replica : set.master;
      // Forgotten first: a Sentinel that saw its replica turn master would announce it, and turn it back.
      await ask(set.sentinel, ['SENTINEL', 'REMOVE', SENTINEL_MASTER_NAME]);
      await ask(other, ['REPLICAOF', 'NO', 'ONE']);
      await ask(set.sentinel, ['SENTINEL', 'MONITOR', SENTINEL_MASTER_NAME, '127.0.0.1', String(other.port), '1']);
      await vi.waitFor(async () =>
        expect(String(await ask(old, ['INFO', 'replication']))).toContain('connected_slaves:0'),
      );
      expect(client.getMasterNode()?.port).toBe(old.port);

      // Done on the old master, confirmed by no replica: not answered as done.
      await expect(store.put('code', taggedId(tag, 16), { lost: true }, { ttl: 120 })).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
      expect(faults).toContainEqual({ kind: 'second-master', node: old.address });
      expect(store.topologyFaults['second-master']).toBeGreaterThan(0);
      // From now on it is refused before anything is sent: a consume there would burn the request for nothing.
      const ran = await calls(old, 'evalsha');
      await expect(store.consume('backchannel', pending)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.put('code', taggedId(tag, 16), { lost: true }, { ttl: 120 })).rejects.toThrow(
        /not the master Sentinel names/,
      );
      expect(await calls(old, 'evalsha')).toBe(ran);
    } finally {
      await store.close();
      await client.destroy();
    }
  });
});

/**
 * Issue 47, the Sentinel kill drill's long windows: while node-redis' Sentinel client looks for the new master it
 * holds the commands it is given, and handed them all to the new master once found, long after their callers had
 * their 503; each write's WAIT then blocked the new master (no replica yet) 100 ms at a time. A command whose deadline
 * has passed is dropped instead: what was answered 503 is never done later.
 */
describe.skipIf(skip)('a killed master behind Sentinel: writes answered 503 meanwhile', () => {
  const sentinels = sentinelSetOfBlock();

  it('are never run on the new master once it is found', { timeout: 30_000 }, async () => {
    const set = sentinels();
    const client = await connectedSentinel(set, QUICK);
    const store = new RedisStore({ client, prefix: freshPrefix(), timeout: 300 });
    try {
      await store.open();
      const old = await set.killMaster();
      // Before Sentinel even calls the master down: the client is looking for a master, the store answers 503.
      const ids = Array.from({ length: 20 }, () => taggedId(randomTag(), 16));
      const outcomes = await Promise.allSettled(ids.map((id) => store.put('code', id, { late: true }, { ttl: 60 })));
      expect(outcomes.map((o) => o.status)).toEqual(ids.map(() => 'rejected'));
      await set.waitForFailover(old);
      // Served again by the promoted replica.
      await vi.waitFor(() => store.put('code', taggedId(randomTag(), 16), { after: true }, { ttl: 60 }), {
        timeout: 15_000,
        interval: 200,
      });
      for (const id of ids) expect(await store.get('code', id)).toBeUndefined();
    } finally {
      await store.close();
      await client.destroy();
    }
  });
});
