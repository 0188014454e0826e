import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisStore } from '../../lib/stores/redis.js';
import { StoreUnavailableError } from '../../lib/stores/store.js';
import { randomTag, taggedId } from '../../lib/crypto.js';
import { freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import { RedisCluster, ask } from '../helpers/redis-cluster.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { createCluster } from '../helpers/node-redis.js';
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { APP1, APP2, SIM_SWAP, basic, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { only } from '../helpers/rate-limits.js';
import { MemoryStore } from '../../lib/stores/memory.js';
import { callApi } from '../helpers/frontend.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';
import { describeStoreContract } from './contract.js';

/**
 * RedisStore on a real Redis Cluster (test/helpers/redis-cluster.ts): the shared contract through a node-redis
 * createCluster() client, a URL naming one node (the store finds the cluster), keys spread over every master,
 * and a master killed under a 3+3 cluster: the store heals by itself and keeps what it wrote.
 */

const skip = skipRedisTests('the Redis Cluster tests');
const ALICE = 'tel:+34600000001';

type Cluster = ReturnType<RedisCluster['client']>;

/** Keys per master: how many of `keys` live on each of the cluster's masters. */
async function keysPerMaster(cluster: RedisCluster, prefix: string): Promise<number[]> {
  const masters = await cluster.masterServers();
  return Promise.all(masters.map(async (m) => ((await ask(m, ['KEYS', `${prefix}*`])) as string[]).length));
}

describe.skipIf(skip)('redis store on a Redis Cluster (3 masters, a replica each)', () => {
  let cluster: RedisCluster;
  let client: Cluster;

  beforeAll(async () => {
    requireRedisServer();
    cluster = await RedisCluster.start({ masters: 3, replicas: 1, requireFullCoverage: false });
    client = cluster.client();
    await client.connect();
  }, 30_000);

  afterAll(async () => {
    client?.destroy();
    await cluster?.destroy();
  });

  describeStoreContract('redis cluster client', async () => {
    const store = new RedisStore({ client, prefix: freshPrefix() });
    await store.open();
    return { store, elapse: (seconds) => sleep(seconds * 1000), close: () => store.close() };
  });

  describeStoreContract('redis cluster from one url', async () => {
    const store = new RedisStore({ url: cluster.nodes[1]!.url, prefix: freshPrefix() });
    await store.open();
    return { store, elapse: (seconds) => sleep(seconds * 1000), close: () => store.close() };
  });

  it("counts a gateway's rate limits on the cluster, through the store's client", async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ url: cluster.nodes[2]!.url, prefix });
    const gw = createTestGateway({ store });
    try {
      await store.open();
      const token = (await pollToken(gw.app, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP))).body
        .access_token as string;
      expect((await callApi(gw.app, token)).status).toBe(200);
      const counters = await Promise.all(
        (await cluster.masterServers()).map(async (m) => (await ask(m, ['KEYS', `${prefix}rl:*`])) as string[]),
      );
      expect(counters.flat().length).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it('merged rate-limit counters on the cluster: one script per call, its keys on one shard; a cluster client given as rateLimits.redis counts the same', async () => {
    const rules = only({
      bcAuthorize: {
        perClientAndSubscriber: { points: 2, duration: 600 },
        perSubscriber: { points: 3, duration: 600 },
      },
      clientAuthentication: { perClientAndAddress: { failures: 2, duration: 900 } },
    });
    const prefix = freshPrefix();
    const store = new RedisStore({ url: cluster.nodes[0]!.url, prefix });
    const keyPrefix = `${freshPrefix()}rl:`;
    const errors: unknown[] = [];
    // One instance on the store's cluster connection (from a URL), one on a createCluster() client: one set of counters.
    const a = createTestGateway({ store, rateLimits: { ...rules, keyPrefix }, onError: (error) => errors.push(error) });
    const b = createTestGateway({
      store: new MemoryStore(),
      rateLimits: { ...rules, redis: client, keyPrefix },
      onError: (error) => errors.push(error),
    });
    for (const gw of [a, b]) gw.netauth.events.on('rate.fallback', (event) => void errors.push(event));
    try {
      // Connected and the cluster found before the counters' first call (their deadline is 500 ms).
      await store.open();
      const send = (gw: TestGateway, authorization = APP1) =>
        request(gw.app)
          .post('/apigateway/bc-authorize')
          .set('X-Forwarded-For', '203.0.113.9')
          .set('Authorization', authorization)
          .type('form')
          .send({ login_hint: ALICE, scope: SIM_SWAP });
      expect((await send(a)).status).toBe(200);
      expect((await send(b)).status).toBe(200);
      const refused = await send(a);
      expect([refused.status, refused.body.error]).toEqual([429, 'temporarily_unavailable']);
      expect((await send(b, APP2)).status).toBe(200);
      // The ceiling: three within the clients' allowances (app-1's refused one never reached it).
      expect((await send(a, APP2)).status).toBe(429);
      // The lock-out on the cluster too: two refused secrets lock app-1 at that address on both instances.
      expect((await send(b, basic('app-1', 'wrong'))).status).toBe(401);
      expect((await send(a, basic('app-1', 'wrong'))).status).toBe(401);
      expect((await send(b)).status).toBe(429);

      const placed = new Map<string, string>();
      for (const master of await cluster.masterServers()) {
        for (const key of (await ask(master, ['KEYS', `${keyPrefix}*`])) as string[])
          placed.set(key.slice(keyPrefix.length), master.address);
      }
      // The subscriber's counters (app-1's and app-2's allowances, the ceiling) share its hash tag, so one shard.
      const subscriberKeys = [
        'bc-authorize:client-subscriber:{sub-alice}app-1',
        'bc-authorize:client-subscriber:{sub-alice}app-2',
        'bc-authorize:subscriber:{sub-alice}',
      ];
      expect(subscriberKeys.map((k) => placed.get(k))).toEqual(
        Array(3).fill(placed.get('bc-authorize:subscriber:{sub-alice}')),
      );
      expect(placed.get('auth-failures:client-address:{app-1}203.0.113.9')).toBe(
        placed.get('auth-attempts:client-address:{app-1}203.0.113.9'),
      );
      // Nothing fell back to per-process counting (a CROSSSLOT or MOVED would have, and said so).
      expect(errors).toEqual([]);
    } finally {
      await a.netauth.close();
      await b.netauth.close();
      await store.close();
    }
  });

  it('spreads grants over every master, each grant on one', async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ client, prefix });
    try {
      for (let i = 0; i < 30; i++) {
        const tag = randomTag();
        const grant = taggedId(tag, 16);
        const code = taggedId(tag, 32);
        await store.put('code', code, { i }, { ttl: 60, grants: [grant] });
        await store.consume('code', code, [
          { kind: 'access_token', id: taggedId(tag, 32), value: { i }, options: { ttl: 60, grants: [grant] } },
        ]);
      }
      const counts = await keysPerMaster(cluster, prefix);
      expect(counts).toHaveLength(3);
      for (const count of counts) expect(count).toBeGreaterThan(0);
      // One master holds each grant's code, token and index.
      for (const master of await cluster.masterServers()) {
        const keys = (await ask(master, ['KEYS', `${prefix}*`])) as string[];
        const tags = (kind: string) =>
          new Set(
            keys.filter((k) => k.startsWith(`${prefix}${kind}.`)).map((k) => k.slice(k.indexOf('{'), k.indexOf('}'))),
          );
        expect(tags('t')).toEqual(tags('c'));
        expect(tags('g')).toEqual(tags('c'));
      }
    } finally {
      await store.close();
    }
  });

  it('waits for a replica after each write, answers 503 while the master is gone, then heals by itself with everything it wrote', {
    timeout: 60_000,
  }, async () => {
    const client = cluster.client();
    await client.connect();
    const tag = randomTag();
    const master = await cluster.masterOf(`{${tag}}`);
    const store = new RedisStore({ client, prefix: freshPrefix(), timeout: 1000 });
    // Given only the URL of the master about to die: it must find the others by itself.
    const fromUrl = new RedisStore({ url: master.url, prefix: store.prefix, timeout: 1000 });
    try {
      await store.open();
      await fromUrl.open();
      const grant = taggedId(tag, 16);
      const ids = Array.from({ length: 20 }, () => taggedId(tag, 32));
      for (const id of ids) await store.put('backchannel', id, { id }, { ttl: 120, grants: [grant] });
      expect(
        await store.consume('backchannel', ids[0]!, [
          { kind: 'access_token', id: taggedId(tag, 32), value: {}, options: { ttl: 120, grants: [grant] } },
        ]),
      ).toBe(true);

      await master.stop();
      await expect(store.get('backchannel', ids[1]!)).rejects.toBeInstanceOf(StoreUnavailableError);

      // Neither store is restarted: both find the promoted replica once the cluster has failed over.
      for (const s of [store, fromUrl]) {
        await vi.waitFor(() => s.get('backchannel', ids[1]!), { timeout: 30_000, interval: 100 });
      }
      expect(await cluster.masterOf(`{${tag}}`)).not.toBe(master);
      // Everything written before the failure survived it: the replica had it before the write was answered.
      for (const id of ids) expect((await fromUrl.get('backchannel', id))?.value).toEqual({ id });
      expect(await store.consume('backchannel', ids[0]!)).toBe(false);
      expect(await store.consume('backchannel', ids[1]!)).toBe(true);
    } finally {
      await store.close();
      await fromUrl.close();
      client.destroy();
    }
  });

  // Last: a whole shard (master and replica) down, then its master back empty.
  describe('one shard down (cluster-require-full-coverage no)', () => {
    let dead: RedisServer;
    let downTag: string;
    let upTag: string;

    beforeAll(async () => {
      // A shard whose replica runs (not the one the failover above left without).
      const nodes = await cluster.topology();
      const up = (n: { flags: string[] }) => !n.flags.includes('fail');
      const line = nodes.find(
        (m) => m.flags.includes('master') && up(m) && nodes.some((r) => r.masterId === m.id && up(r)),
      )!;
      dead = cluster.nodes.find((n) => n.address === line.address)!;
      const replica = cluster.nodes.find((n) => n.address === nodes.find((r) => r.masterId === line.id)!.address)!;
      for (let i = 0; !downTag || !upTag; i++) {
        const tag = `t${i}`;
        if ((await cluster.masterOf(`{${tag}}`)) === dead) downTag ??= tag;
        else upTag ??= tag;
      }
      await replica.stop();
      await dead.stop();
      // Every other node has marked it failed: the cluster serves the other shards' slots.
      const flags = async () => (await cluster.topology()).find((n) => n.address === dead.address)?.flags;
      await vi.waitFor(async () => expect(await flags()).toContain('fail'), { timeout: 15_000, interval: 50 });
    }, 30_000);

    it("the docs' createCluster() client connects, and open() starts on the shards that answer", async () => {
      const docs = readFileSync(new URL('../../docs/redis-store.md', import.meta.url), 'utf8');
      expect(docs).toContain('minimizeConnections: true');
      // As docs/redis-store.md gives it: connect() only reads the slot map, so a dead master cannot hold it up.
      const docsClient = createCluster({
        rootNodes: cluster.nodes.map((n) => ({ url: n.url })),
        minimizeConnections: true,
        defaults: { disableOfflineQueue: true, socket: { connectTimeout: 2000 } },
      });
      docsClient.on('error', () => {});
      docsClient.on('node-error', () => {});
      await docsClient.connect();
      const prefix = freshPrefix();
      const stores = [
        new RedisStore({ client: docsClient, prefix, timeout: 500 }),
        new RedisStore({ url: cluster.running[0]!.url, prefix, timeout: 500 }),
      ];
      try {
        for (const store of stores) {
          await store.open();
          await store.put('code', `${upTag}.x`, { v: 1 }, { ttl: 60 });
          expect((await store.get('code', `${upTag}.x`))?.value).toEqual({ v: 1 });
          await expect(store.get('code', `${downTag}.x`)).rejects.toBeInstanceOf(StoreUnavailableError);
        }
      } finally {
        for (const store of stores) await store.close();
        docsClient.destroy();
      }
    });

    it('a store started with the shard down places its marker when it returns', { timeout: 30_000 }, async () => {
      const losses: unknown[] = [];
      const prefix = freshPrefix();
      const url = cluster.running[0]!.url;
      // 2 s to connect: the cluster's discovery on a loaded machine took longer than 500 ms once (CI-like run).
      const store = new RedisStore({ url, prefix, timeout: 2000, onDataLoss: (e) => losses.push(e) });
      try {
        await store.open();
        await dead.restart();
        const marker = async () => (await ask(dead, ['KEYS', `${prefix}boot*`])) as string[];
        await vi.waitFor(
          async () => {
            // A write to the returned shard reconnects the client to it (and so checks the markers).
            await store.put('code', `${downTag}.y`, { v: 1 }, { ttl: 60 }).catch(() => {});
            expect(await marker()).toHaveLength(1);
          },
          { timeout: 20_000, interval: 100 },
        );
        // Nothing was known of it before: placing it is not a loss.
        expect(losses).toEqual([]);
      } finally {
        await store.close();
      }
    });
  });
});
