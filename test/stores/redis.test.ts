import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient } from '../helpers/node-redis.js';
import { RedisStore } from '../../lib/stores/redis.js';
import { StoreUnavailableError } from '../../lib/stores/store.js';
import {
  RedisServer,
  freshPrefix,
  redisServerMissing,
  requireRedisServer,
  skipRedisTests,
} from '../helpers/redis-server.js';
import { basic, createTestGateway, SIM_SWAP } from '../helpers/gateway.js';
import { codeFor, redeem, CALLBACK, callApi } from '../helpers/frontend.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';
import { describeStoreContract } from './contract.js';

// Without redis-server these tests skip, except under CI, where they must run (and so fail loudly).
const skip = skipRedisTests('the Redis store tests');

/** Every store gets its own key prefix, so tests never see each other's keys. */

type RawClient = ReturnType<typeof createClient>;

async function rawClient(url: string, options: { offlineQueue?: boolean } = {}): Promise<RawClient> {
  const client = createClient({
    url,
    disableOfflineQueue: !options.offlineQueue,
    socket: { reconnectStrategy: () => 100 },
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

describe.skipIf(skip)(`redis store${skip ? ` (skipped: ${redisServerMissing()})` : ''}`, () => {
  let server: RedisServer;
  let raw: RawClient;

  beforeAll(async () => {
    requireRedisServer();
    server = await RedisServer.start();
    raw = await rawClient(server.url);
  });

  afterAll(async () => {
    if (raw?.isOpen) raw.destroy();
    await server?.destroy();
  });

  describeStoreContract('redis', async () => {
    const store = new RedisStore({ url: server.url, prefix: freshPrefix() });
    return {
      store,
      // Redis expires keys on its own clock, so time has to really pass.
      elapse: (seconds) => sleep(seconds * 1000),
      close: () => store.close(),
    };
  });

  it('gives every key but the data-loss marker a TTL; a grant index lives as long as its longest member', async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ url: server.url, prefix });
    try {
      await store.put('code', 'c', { v: 1 }, { ttl: 60, grants: ['g'] });
      await store.put('access_token', 't', { v: 2 }, { ttl: 300, grants: ['g'] });
      await store.put('consent', 'k', { v: 3 }, { ttl: 10, grants: ['g', 'h'] });
      const index = `${prefix}g:{g}`;
      expect(Number(await raw.pTTL(index))).toBeGreaterThan(60_000);
      expect(Number(await raw.pTTL(index))).toBeLessThanOrEqual(300_000);
      expect(Number(await raw.pTTL(`${prefix}g:{h}`))).toBeLessThanOrEqual(10_000);

      const keys = await raw.keys(`${prefix}*`);
      expect(keys.sort()).toEqual(
        [
          `${prefix}boot{0}`,
          `${prefix}g:{g}`,
          `${prefix}g:{h}`,
          `${prefix}t:{t}`,
          `${prefix}c:{c}`,
          `${prefix}k:{k}`,
        ].sort(),
      );
      for (const key of keys) {
        if (key === `${prefix}boot{0}`) expect(Number(await raw.pTTL(key))).toBe(-1);
        else expect(Number(await raw.pTTL(key))).toBeGreaterThan(0);
      }
    } finally {
      await store.close();
    }
  });

  it('keeps the records of one grant under one hash tag, each a short string, each index a compact listpack', async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ url: server.url, prefix });
    const tag = 'Ab3dEf_1';
    const authReqId = `${tag}.${'x'.repeat(43)}`;
    try {
      await store.put('backchannel', authReqId, { clientId: 'app-1' }, { ttl: 60, grants: [`${tag}.grant`] });
      await store.consume('backchannel', authReqId, [
        {
          kind: 'access_token',
          id: `${tag}.${'y'.repeat(43)}`,
          value: { t: 1 },
          options: { ttl: 60, grants: [`${tag}.grant`] },
        },
      ]);
      const keys = (await raw.keys(`${prefix}*`)).filter((k) => !k.startsWith(`${prefix}boot`));
      expect(keys.sort()).toEqual(
        [
          `${prefix}b.{${tag}}${'x'.repeat(43)}`,
          `${prefix}g.{${tag}}grant`,
          `${prefix}t.{${tag}}${'y'.repeat(43)}`,
        ].sort(),
      );
      expect(await raw.get(`${prefix}b.{${tag}}${'x'.repeat(43)}`)).toBe(`1["${tag}.grant"]\n{"clientId":"app-1"}`);
      const members = await raw.zRange(`${prefix}g.{${tag}}grant`, 0, -1);
      expect(members.sort()).toEqual([`b.{${tag}}${'x'.repeat(43)}`, `t.{${tag}}${'y'.repeat(43)}`]);
      for (const member of members) expect(Buffer.byteLength(member)).toBeLessThanOrEqual(64);
      expect(await raw.sendCommand(['OBJECT', 'ENCODING', `${prefix}g.{${tag}}grant`])).toBe('listpack');
    } finally {
      await store.close();
    }
  });

  it('revoking a grant spares an id that expired and was written again under another grant', async () => {
    const store = new RedisStore({ url: server.url, prefix: freshPrefix() });
    try {
      await store.put('consent', 'client|sub|purpose', { v: 1 }, { ttl: 1, grants: ['old'] });
      await store.put('access_token', 'long', { v: 2 }, { ttl: 60, grants: ['old'] });
      await sleep(1500);
      // Same id again (consent ids are deterministic), now under another grant.
      await store.put('consent', 'client|sub|purpose', { v: 3 }, { ttl: 60, grants: ['new'] });
      await store.revokeGrant('old');
      expect((await store.get('consent', 'client|sub|purpose'))?.value).toEqual({ v: 3 });
      expect(await store.get('access_token', 'long')).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('keeps a grant index to its live members', async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ url: server.url, prefix });
    const index = `${prefix}g:{g}`;
    try {
      await store.put('consent', 'anchor', { v: 0 }, { ttl: 60, grants: ['g'] });
      for (let i = 0; i < 20; i++) await store.put('access_token', `old${i}`, { i }, { ttl: 1, grants: ['g'] });
      await sleep(1500);
      // Members whose records have expired go with the next write to the index.
      await store.put('access_token', 'fresh', { v: 1 }, { ttl: 60, grants: ['g'] });
      expect((await raw.zRange(index, 0, -1)).sort()).toEqual(['k:{anchor}', 't:{fresh}']);
    } finally {
      await store.close();
    }
  });

  it('of 50 concurrent consumes through two separate connections exactly one wins', async () => {
    const prefix = freshPrefix();
    const a = new RedisStore({ url: server.url, prefix });
    const b = new RedisStore({ url: server.url, prefix });
    try {
      await a.put('code', 'race', { v: 1 }, { ttl: 60 });
      expect(await b.get('code', 'race')).toEqual({ value: { v: 1 }, consumed: false });
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).consume('code', 'race')),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await a.get('code', 'race')).toEqual({ value: { v: 1 }, consumed: true });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('uses the prefix netauth: by default and stores values as JSON', async () => {
    const id = randomUUID();
    const store = new RedisStore({ url: server.url });
    try {
      await store.put('code', id, { clientId: 'c1', list: [1, null] }, { ttl: 60 });
      expect(await raw.get(`netauth:c:{${id}}`)).toBe('0[]\n{"clientId":"c1","list":[1,null]}');
      await store.delete('code', id);
    } finally {
      await store.close();
    }
  });

  it('refuses a prefix with a hash tag of its own: every key would land on one cluster shard', () => {
    expect(() => new RedisStore({ url: server.url, prefix: '{netauth}:' })).toThrow(/remove the \{ \}/);
  });

  it('refuses a replicaWait that is not a whole number of milliseconds above 0, naming the option', () => {
    for (const replicaWait of [0, -1, 1.5, Number.NaN]) {
      expect(() => new RedisStore({ url: server.url, replicaWait })).toThrow(/^replicaWait must be a whole number/);
    }
  });

  it('refuses a TTL that is not finite', async () => {
    const store = new RedisStore({ url: server.url, prefix: freshPrefix() });
    try {
      await expect(store.put('code', 'x', {}, { ttl: Number.POSITIVE_INFINITY })).rejects.toThrow(RangeError);
      await expect(store.put('code', 'x', {}, { ttl: Number.NaN })).rejects.toThrow(RangeError);
      expect(await store.get('code', 'x')).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('works with an injected client and leaves it open on close()', async () => {
    const client = await rawClient(server.url);
    try {
      const store = new RedisStore({ client, prefix: freshPrefix() });
      await store.put('poll', 'p', { v: 1 }, { ttl: 60 });
      expect(await store.consume('poll', 'p')).toBe(true);
      await store.close();
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.destroy();
    }
  });

  it('runs the store and a gateway with its rate limits as the ACL user docs/redis-store.md gives', async () => {
    const docs = readFileSync(new URL('../../docs/redis-store.md', import.meta.url), 'utf8');
    const rule = /`(ACL SETUSER netauth [^`]+)`/.exec(docs)![1]!.replace('>…', '>acl-test-password');
    expect(await raw.sendCommand(rule.split(' '))).toBe('OK');
    await raw.sendCommand(['ACL', 'LOG', 'RESET']);
    const store = new RedisStore({ url: `redis://netauth:acl-test-password@127.0.0.1:${server.port}` });
    try {
      await store.open();
      await store.put('code', 'Ac.code', { v: 1 }, { ttl: 60, grants: ['Ac.grant', 'Other.grant'] });
      expect(await store.add('jti', 'acl-jti', { v: 1 }, { ttl: 60 })).toBe(true);
      expect(
        await store.consume('code', 'Ac.code', [
          { kind: 'access_token', id: 'Ac.token', value: {}, options: { ttl: 60, grants: ['Ac.grant'] } },
        ]),
      ).toBe(true);
      await store.revokeGrant('Ac.grant');
      await store.delete('jti', 'acl-jti');
      expect(await store.get('access_token', 'Ac.token')).toBeUndefined();

      // The gateway's default rate limits count on the same connection, as the same user.
      const errors: unknown[] = [];
      const gw = createTestGateway({ store, onError: (error) => errors.push(error) });
      gw.netauth.events.on('rate.fallback', (event) => void errors.push(event));
      const token = (await pollToken(gw.app, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP))).body
        .access_token as string;
      expect((await callApi(gw.app, token)).status).toBe(200);
      expect((await redeem(gw.app, { code: await codeFor(gw), redirect_uri: CALLBACK })).status).toBe(200);
      // A failed client authentication: the lock-out counters are written too.
      expect((await pollToken(gw.app, 'x', basic('app-1', 'wrong'))).status).toBe(401);
      expect(await raw.keys('netauth:rl:*')).not.toEqual([]);
      // Redis logs every command the user was refused (the counters would fall back to per-process ones, and say
      // so with rate.fallback): none.
      expect(await raw.sendCommand(['ACL', 'LOG'])).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await store.close();
    }
  });

  describe('open(): the start-up check', () => {
    it('rejects naming the host and port, never the password, when nothing answers there', async () => {
      const store = new RedisStore({ url: 'redis://netauth:s3cret@127.0.0.1:1', timeout: 500 });
      try {
        const error = await store.open().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect((error as Error).message).toBe('cannot connect to Redis at 127.0.0.1:1 (ECONNREFUSED)');
        expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('s3cret');
      } finally {
        await store.close();
      }
    });

    it('rejects a replica: writes there would fail at every request', async () => {
      const replica = await RedisServer.start({ args: () => ['--replicaof', '127.0.0.1', String(server.port)] });
      const store = new RedisStore({ url: replica.url, timeout: 500 });
      try {
        await expect(store.open()).rejects.toThrow(
          `Redis at ${replica.address} is a slave, not a master: give the master's url, or a Sentinel or Cluster client`,
        );
      } finally {
        await store.close();
        await replica.destroy();
      }
    });

    it('refuses a Redis that may evict keys, unless allowEviction; warns where it cannot read the policy', async () => {
      const warnings: string[] = [];
      const onWarning = (warning: Error) => void warnings.push(warning.message);
      process.on('warning', onWarning);
      await raw.sendCommand(['CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru']);
      const refused = new RedisStore({ url: server.url, prefix: freshPrefix() });
      const allowed = new RedisStore({ url: server.url, prefix: freshPrefix(), allowEviction: true });
      try {
        await expect(refused.open()).rejects.toThrow(
          `Redis at ${server.address} evicts keys (maxmemory-policy allkeys-lru): tokens, used codes and revocations ` +
            'would vanish before they expire. Set maxmemory-policy noeviction ' +
            '(docs/redis-store.md#eviction-noeviction), or pass allowEviction: true',
        );
        await allowed.open();
        await allowed.put('code', 'Ev.1', { v: 1 }, { ttl: 60 });
      } finally {
        await raw.sendCommand(['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
        await refused.close();
        await allowed.close();
      }
      // A user without CONFIG (managed Redis): a warning, and the store starts.
      await raw.sendCommand(['ACL', 'SETUSER', 'no-config', 'on', '>no-config-password', '~*', '+@all', '-config']);
      const url = `redis://no-config:no-config-password@127.0.0.1:${server.port}`;
      const managed = new RedisStore({ url, prefix: freshPrefix() });
      try {
        await managed.open();
        const warning = `cannot read maxmemory-policy of Redis at ${server.address}: make sure it is noeviction`;
        await vi.waitFor(() => expect(warnings).toContain(`${warning} (docs/redis-store.md#eviction-noeviction)`));
      } finally {
        process.off('warning', onWarning);
        await managed.close();
        await raw.sendCommand(['ACL', 'DELUSER', 'no-config']);
      }
    });

    it('rejects an injected client that was never connected', async () => {
      const client = createClient({ url: server.url });
      const store = new RedisStore({ client });
      await expect(store.open()).rejects.toThrow(
        `the Redis client given to RedisStore (${server.address}) is not connected: await client.connect() first`,
      );
    });
  });

  // The server here keeps nothing across a restart: stores that do not test the data-loss report silence it.
  describe('when Redis goes away', () => {
    let own: RedisServer;
    beforeAll(async () => {
      own = await RedisServer.start();
    });
    afterAll(async () => {
      await own?.destroy();
    });

    async function expectUnavailable(store: RedisStore): Promise<void> {
      await expect(store.put('code', 'x', { v: 1 }, { ttl: 60, grants: ['g'] })).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
      await expect(store.get('code', 'x')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.consume('code', 'x')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.delete('code', 'x')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.revokeGrant('g')).rejects.toBeInstanceOf(StoreUnavailableError);
    }

    it('rejects with StoreUnavailableError while stopped and recovers by itself once restarted', {
      timeout: 30_000,
    }, async () => {
      await own.restart();
      const losses: unknown[] = [];
      const store = new RedisStore({ url: own.url, prefix: freshPrefix(), onDataLoss: (error) => losses.push(error) });
      try {
        await store.put('code', 'before', { v: 1 }, { ttl: 60 });
        await own.stop();
        await expectUnavailable(store);
        await own.restart();
        // The same store object reconnects on its own; wait (bounded) until it has.
        await vi.waitFor(() => store.get('code', 'nothing'), { timeout: 15_000, interval: 100 });
        await store.put('code', 'after', { v: 2 }, { ttl: 60 });
        expect(await store.consume('code', 'after')).toBe(true);
        expect(await store.get('code', 'after')).toEqual({ value: { v: 2 }, consumed: true });
        // The server came back empty, and the store said so.
        expect(await store.get('code', 'before')).toBeUndefined();
        await vi.waitFor(() => expect(losses).toHaveLength(1), { timeout: 15_000, interval: 50 });
      } finally {
        await store.close();
      }
    });

    it('a store created while Redis is down rejects, then works once Redis is up', { timeout: 30_000 }, async () => {
      await own.stop();
      const store = new RedisStore({ url: own.url, prefix: freshPrefix(), onDataLoss: () => {} });
      try {
        await expectUnavailable(store);
        await own.restart();
        await vi.waitFor(() => store.get('code', 'nothing'), { timeout: 15_000, interval: 100 });
        await store.put('code', 'x', { v: 1 }, { ttl: 60 });
        expect(await store.consume('code', 'x')).toBe(true);
      } finally {
        await store.close();
      }
    });

    it('reports a Redis that came back without the data, once per loss; not one that kept it (appendonly)', {
      timeout: 30_000,
    }, async () => {
      // fsync before each reply, so the test does not depend on when the disk catches up.
      const durable = await RedisServer.start({ args: () => ['--appendonly', 'yes', '--appendfsync', 'always'] });
      const losses: Array<{ store: string; shard: string }> = [];
      const watch = (name: string, url: string) =>
        new RedisStore({
          url,
          prefix: freshPrefix(),
          timeout: 500,
          onDataLoss: (error) => losses.push({ store: name, shard: error.shard }),
        });
      await own.restart();
      const lossy = watch('lossy', own.url);
      const kept = watch('kept', durable.url);
      try {
        await lossy.open();
        await kept.open();
        await kept.put('consent', 'k', { v: 1 }, { ttl: 600 });
        for (const server of [own, durable]) {
          await server.stop();
          await server.restart();
        }
        await vi.waitFor(() => expect(losses).toEqual([{ store: 'lossy', shard: own.address }]), {
          timeout: 10_000,
          interval: 50,
        });
        await vi.waitFor(() => kept.get('consent', 'k'), { timeout: 10_000, interval: 50 });
        expect((await kept.get('consent', 'k'))?.value).toEqual({ v: 1 });
        // A second loss is reported again.
        await own.stop();
        await own.restart();
        await vi.waitFor(() => expect(losses).toHaveLength(2), { timeout: 10_000, interval: 50 });
        expect(losses[1]).toEqual({ store: 'lossy', shard: own.address });
      } finally {
        await lossy.close();
        await kept.close();
        await durable.destroy();
      }
    });

    it('an injected client that queues commands while offline still rejects instead of hanging', {
      timeout: 30_000,
    }, async () => {
      await own.restart();
      const client = await rawClient(own.url, { offlineQueue: true });
      const store = new RedisStore({ client, prefix: freshPrefix(), timeout: 300, onDataLoss: () => {} });
      try {
        await store.put('code', 'x', { v: 1 }, { ttl: 60 });
        await own.stop();
        await expectUnavailable(store);
        await own.restart();
        await vi.waitFor(() => store.get('code', 'nothing'), { timeout: 15_000, interval: 100 });
        expect(await store.consume('code', 'nothing')).toBe(false);
      } finally {
        await store.close();
        client.destroy();
      }
    });
  });
});
