import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisStore, type TopologyFault } from '../../lib/stores/redis.js';
import { StoreUnavailableError } from '../../lib/stores/store.js';
import { randomTag, taggedId } from '../../lib/crypto.js';
import { freshPrefix, requireRedisServer, skipRedisTests, type RedisServer } from '../helpers/redis-server.js';
import { RedisCluster, ask } from '../helpers/redis-cluster.js';
import request from 'supertest';
import { APP1, APP2, CIBA, createTestGateway } from '../helpers/gateway.js';
import { only } from '../helpers/rate-limits.js';

/**
 * Issue 47: a hung Cluster master (SIGSTOP: its port still accepts connections, nothing answers) must cost what
 * a dead one costs. Once its replica is promoted, the store serves the slots from the new master, also when the
 * hung node is the one the store was started from; `open()` through a hung node fails within its timeout.
 */

const skip = skipRedisTests('the Redis Cluster hang tests');
const TIMEOUT = 500;

describe.skipIf(skip)('a hung Redis Cluster master (SIGSTOP)', () => {
  let cluster: RedisCluster;

  beforeAll(async () => {
    requireRedisServer();
    cluster = await RedisCluster.start({ masters: 3, replicas: 1, nodeTimeout: 1000 });
  }, 30_000);

  afterAll(async () => {
    await cluster?.destroy();
  });

  /** Stops `server` (SIGSTOP) for the duration of `body`, then lets it go on (SIGCONT). */
  async function hung<T>(server: RedisServer, body: () => Promise<T>): Promise<T> {
    process.kill(server.pid!, 'SIGSTOP');
    try {
      return await body();
    } finally {
      process.kill(server.pid!, 'SIGCONT');
    }
  }

  /** Waits until `witness` reports another master than `old` for the slot of `{tag}` (the replica was promoted). */
  async function promoted(old: RedisServer, witness: RedisServer, tag: string): Promise<void> {
    const slot = Number(await ask(witness, ['CLUSTER', 'KEYSLOT', `{${tag}}`]));
    await vi.waitFor(
      async () => {
        const lines = String(await ask(witness, ['CLUSTER', 'NODES']))
          .trim()
          .split('\n');
        const owner = lines
          .map((line) => line.split(' '))
          .find(
            (f) =>
              f[2]!.includes('master') &&
              !f[2]!.includes('fail') &&
              f.slice(8).some((range) => {
                const [from, to] = range.split('-').map(Number);
                return slot >= from! && slot <= (to ?? from!);
              }),
          );
        expect(owner?.[1]?.split('@')[0]).toBeDefined();
        expect(owner![1]!.split('@')[0]).not.toBe(old.address);
      },
      { timeout: 15_000, interval: 100 },
    );
  }

  it('once the replica is promoted, requests succeed again, from a store started on the hung node too', {
    timeout: 40_000,
  }, async () => {
    // The master of slot 0: the first in the client's list of masters, the one a refresh used to ask first.
    const master = await cluster.masterOf('{DLH}');
    expect(Number(await ask(master, ['CLUSTER', 'KEYSLOT', '{DLH}']))).toBe(0);
    let tag = randomTag();
    while ((await cluster.masterOf(`{${tag}}`)) !== master) tag = randomTag();
    const witness = cluster.nodes.find((n) => n !== master && n.running)!;
    const prefix = freshPrefix();
    // Started from the node about to hang: the worst case for rediscovery, which starts from the root nodes.
    const fromHung = new RedisStore({ url: master.url, prefix, timeout: TIMEOUT });
    const fromOther = new RedisStore({ url: witness.url, prefix, timeout: TIMEOUT });
    // An application's createCluster() client (connected to every master at once).
    const client = cluster.client();
    await client.connect();
    const injected = new RedisStore({ client, prefix, timeout: TIMEOUT });
    const id = taggedId(tag, 32);
    try {
      // Before the hang, a loaded machine may take longer than TIMEOUT to discover the cluster: open() is asked again.
      for (const store of [fromHung, fromOther, injected])
        await vi.waitFor(() => store.open(), { timeout: 10_000, interval: 100 });
      await fromHung.put('backchannel', id, { id }, { ttl: 120 });

      await hung(master, async () => {
        // While it hangs, a request waits for the store's timeout at most, and is a 503.
        await expect(fromHung.get('backchannel', id)).rejects.toBeInstanceOf(StoreUnavailableError);
        await promoted(master, witness, tag);
        // The new master serves the slot: both stores find it while the old one still hangs.
        for (const store of [fromHung, fromOther, injected]) {
          await vi.waitFor(async () => expect((await store.get('backchannel', id))?.value).toEqual({ id }), {
            timeout: 4 * TIMEOUT + 2_000,
            interval: 50,
          });
        }
        // And keeps serving it: no request fails once the store has the new map.
        for (let i = 0; i < 20; i++) expect((await fromHung.get('backchannel', id))?.value).toEqual({ id });
      });
    } finally {
      await fromHung.close();
      await fromOther.close();
      await injected.close();
      client.destroy();
      await cluster.waitUntilHealthy();
    }
  });

  it('rate.fallback: told once while a hung shard fails its counts and the other shards answer theirs', {
    timeout: 30_000,
  }, async () => {
    // app-2's counters (tag {app-2}, slot 3931) are on slot 0's master, app-1's ({app-1}, slot 16184) on another.
    const master = await cluster.masterOf('{app-2}');
    expect(master).toBe(await cluster.masterOf('{DLH}'));
    expect(await cluster.masterOf('{app-1}')).not.toBe(master);
    const witness = (await cluster.masterServers()).find((n) => n !== master)!;
    const store = new RedisStore({ url: witness.url, prefix: freshPrefix(), timeout: TIMEOUT });
    const gw = createTestGateway({
      store,
      rateLimits: { ...only({ token: { perClient: { points: 50, duration: 60 } } }), timeout: 200 },
    });
    const told: unknown[] = [];
    gw.netauth.events.on('rate.fallback', (event) => void told.push(event));
    const poll = (auth: string) =>
      request(gw.app).post('/apigateway/token').set('Authorization', auth).type('form').send({
        grant_type: CIBA,
        auth_req_id: 'unknown',
      });
    try {
      await vi.waitFor(() => store.open(), { timeout: 10_000, interval: 100 });
      await hung(master, async () => {
        for (let i = 0; i < 4; i++) {
          expect((await poll(APP1)).body.error).toBe('invalid_grant');
          await poll(APP2);
        }
      });
      // Before: each of app-2's failed counts after one of app-1's was a new failure, told at once.
      expect(told.filter((e) => (e as { state: string }).state === 'failing')).toHaveLength(1);
    } finally {
      await gw.netauth.close();
      await store.close();
      await cluster.waitUntilHealthy();
    }
  });

  it('a slot map no master can refresh is reported as stale', { timeout: 20_000 }, async () => {
    const client = cluster.client();
    await client.connect();
    const faults: TopologyFault[] = [];
    const store = new RedisStore({
      client,
      prefix: freshPrefix(),
      timeout: TIMEOUT,
      onTopologyFault: (fault) => void faults.push(fault),
    });
    const masters = await cluster.masterServers();
    try {
      await vi.waitFor(() => store.open(), { timeout: 10_000, interval: 100 });
      for (const master of masters) process.kill(master.pid!, 'SIGSTOP');
      try {
        // Shorter than cluster-node-timeout: no replica takes over meanwhile.
        await expect(store.get('code', taggedId(randomTag(), 16))).rejects.toBeInstanceOf(StoreUnavailableError);
        await vi.waitFor(() => expect(faults.map((f) => f.kind)).toContain('stale-slot-map'), {
          timeout: 4 * TIMEOUT,
          interval: 20,
        });
      } finally {
        for (const master of masters) process.kill(master.pid!, 'SIGCONT');
      }
      expect(store.topologyFaults['stale-slot-map']).toBeGreaterThan(0);
    } finally {
      await store.close();
      client.destroy();
      await cluster.waitUntilHealthy();
    }
  });

  it('open() through a hung node fails within its timeout', { timeout: 20_000 }, async () => {
    const node = cluster.nodes.find((n) => n.running)!;
    const store = new RedisStore({ url: node.url, prefix: freshPrefix(), timeout: TIMEOUT });
    try {
      await hung(node, async () => {
        const opened = store.open().then(
          () => 'opened',
          (error: unknown) => error,
        );
        // Bounded: the answer comes within a few timeouts, not when the node wakes.
        const answer = await Promise.race([opened, sleep(6 * TIMEOUT).then(() => 'still pending')]);
        expect(answer).toBeInstanceOf(StoreUnavailableError);
      });
    } finally {
      await store.close();
      await cluster.waitUntilHealthy();
    }
  });
});
