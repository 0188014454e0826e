import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { createClient } from 'redis';
import { APP1, APP2, LOCATION, SIM_SWAP, basic, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bcAuthorize, pollToken, startBackchannel } from '../helpers/requests.js';
import { CALLBACK, codeFor, redeem } from '../helpers/frontend.js';
import { recordEvents } from '../helpers/events.js';
import { only } from '../helpers/rate-limits.js';
import { MemoryStore, RedisStore, type NetAuthOptions, type RateLimitOptions } from '../../lib/index.js';
import { RedisServer, redisServerMissing, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';

/**
 * The Redis backend of the rate limits against a real redis-server: the counters are shared by every instance
 * on the same Redis and prefix (the RedisStore's own client by default, or a node-redis client given), and
 * each instance counts for itself while Redis is unreachable.
 */

const skip = skipRedisTests('the Redis rate-limit tests');
const ALICE = 'tel:+34600000001';

type RawClient = ReturnType<typeof createClient>;


function expectTooMany(res: request.Response): void {
  expect(res.status).toBe(429);
  expect(res.body.error).toBe('temporarily_unavailable');
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
}

const from = (app: Express, ip: string, authorization: string) =>
  request(app).post('/apigateway/bc-authorize').set('X-Forwarded-For', ip).set('Authorization', authorization).type('form').send({ login_hint: ALICE, scope: SIM_SWAP });

describe.skipIf(skip)(`rate limits on Redis${skip ? ` (skipped: ${redisServerMissing()})` : ''}`, () => {
  let server: RedisServer;
  let raw: RawClient;
  const stores: RedisStore[] = [];
  const clients: RawClient[] = [];

  beforeAll(async () => {
    requireRedisServer();
    server = await RedisServer.start();
    raw = createClient({ url: server.url, disableOfflineQueue: true });
    raw.on('error', () => {});
    await raw.connect();
  });

  afterAll(async () => {
    for (const store of stores) await store.close();
    for (const client of clients) if (client.isOpen) client.destroy();
    if (raw?.isOpen) raw.destroy();
    await server?.destroy();
  });

  /** Two gateway instances on one Redis and prefix, as behind a load balancer. */
  function instances(rateLimits: RateLimitOptions, extra: Partial<NetAuthOptions> = {}): [TestGateway, TestGateway, string] {
    const prefix = `netauth-rl:${randomUUID()}:`;
    const make = () => {
      const store = new RedisStore({ url: server.url, prefix, timeout: 1000 });
      stores.push(store);
      return createTestGateway({ store, rateLimits, ...extra });
    };
    return [make(), make(), prefix];
  }

  it("by default the counters live in the RedisStore's Redis, shared by the instances: 429 on the other one", async () => {
    const [a, b, prefix] = instances(only({ bcAuthorize: { perClient: { points: 3, duration: 60 } } }));
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
    // Under the store's prefix, with a TTL.
    const keys = await raw.keys(`${prefix}rl:*`);
    expect(keys.sort()).toEqual([`${prefix}rl:bc-authorize:client:app-1`, `${prefix}rl:bc-authorize:client:app-2`]);
    for (const key of keys) expect(Number(await raw.pTTL(key))).toBeGreaterThan(0);
  });

  it('per client and subscriber, shared by the instances: one client\'s traffic leaves the other\'s allowance and the ceiling alone', async () => {
    const [a, b, prefix] = instances(only({ bcAuthorize: { perClientAndSubscriber: { points: 2, duration: 600 }, perSubscriber: { points: 3, duration: 600 } } }));
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expectTooMany(await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
    expectTooMany(await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP }, APP2));
    const keys = (await raw.keys(`${prefix}rl:*`)).sort();
    expect(keys).toEqual([
      `${prefix}rl:bc-authorize:client-subscriber:app-1:sub-alice`,
      `${prefix}rl:bc-authorize:client-subscriber:app-2:sub-alice`,
      `${prefix}rl:bc-authorize:subscriber:sub-alice`,
    ]);
    // Three served and app-2's refused one; app-1's two refused requests never reached the ceiling.
    expect(await raw.get(`${prefix}rl:bc-authorize:subscriber:sub-alice`)).toBe('4');
  });

  it('the client-authentication lock-out is shared: failures for a client at an address on one instance lock that pair on the other', async () => {
    const [a, b, prefix] = instances(only({ clientAuthentication: { perClientAndAddress: { failures: 2, duration: 900 }, perAddress: { failures: 2, duration: 900 } } }));
    const events = recordEvents(b.netauth);
    expect((await from(a.app, '203.0.113.20', basic('app-1', 'wrong'))).status).toBe(401);
    expect((await from(b.app, '203.0.113.20', basic('app-1', 'wrong'))).status).toBe(401);
    expectTooMany(await from(b.app, '203.0.113.20', APP1));
    expectTooMany(await from(a.app, '203.0.113.20', APP1));
    expect(events.of('rate.limited')).toEqual([{ endpoint: 'bc-authorize', limit: 'client_authentication', clientId: 'app-1', retryAfter: expect.any(Number) }]);
    // The client elsewhere, and another client at that address, are served on either instance.
    expect((await from(b.app, '203.0.113.21', APP1)).status).toBe(200);
    expect((await from(a.app, '203.0.113.20', APP2)).status).toBe(200);
    // Unknown ids count per address, shared too.
    expect((await from(a.app, '203.0.113.22', basic('nobody', 'x'))).status).toBe(401);
    expect((await from(b.app, '203.0.113.22', basic('nobody-else', 'x'))).status).toBe(401);
    expectTooMany(await from(a.app, '203.0.113.22', basic('nobody', 'x')));
    const keys = (await raw.keys(`${prefix}rl:auth-failures:*`)).sort();
    expect(keys).toEqual([`${prefix}rl:auth-failures:address:203.0.113.22`, `${prefix}rl:auth-failures:client-address:app-1:203.0.113.20`]);
  });

  it('concurrent guesses spread over two instances never get more comparisons than the budget', async () => {
    const [a, b] = instances(only({ clientAuthentication: { perClientAndAddress: { failures: 5, duration: 900 } } }));
    let failed = 0;
    for (const gw of [a, b]) gw.netauth.events.on('client.authentication_failed', () => failed++);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => from(i % 2 ? a.app : b.app, '203.0.113.30', basic('app-1', `guess-${i}`)).then((r) => r.status)));
    expect(answers.filter((s) => s === 401)).toHaveLength(5);
    expect(failed).toBe(5);
    expect(answers.filter((s) => s === 429)).toHaveLength(55);
  });

  it('CIBA polls over the subscriber limit get slow_down on either instance; codes get 429', async () => {
    const [a, b] = instances(only({ token: { perSubscriber: { points: 2, duration: 60 }, perClient: false } }));
    const id = await startBackchannel(a.app, ALICE, LOCATION);
    expect((await pollToken(a.app, id)).body.error).toBe('authorization_pending');
    a.clock.advance(2);
    b.clock.advance(2);
    expect((await pollToken(b.app, id)).body.error).toBe('authorization_pending');
    a.clock.advance(2);
    const res = await pollToken(a.app, id);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('slow_down');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const code = await codeFor(b);
    expectTooMany(await redeem(b.app, { code, redirect_uri: CALLBACK }));
  });

  it('rateLimits.redis: counters on a node-redis client given, with a memory store and a key prefix', async () => {
    const client = createClient({ url: server.url, disableOfflineQueue: true });
    client.on('error', () => {});
    await client.connect();
    clients.push(client);
    const keyPrefix = `rl-given:${randomUUID()}:`;
    const rateLimits = { ...only({ bcAuthorize: { perClient: { points: 1, duration: 60 } } }), redis: client, keyPrefix };
    const a = createTestGateway({ store: new MemoryStore(), rateLimits });
    const b = createTestGateway({ store: new MemoryStore(), rateLimits });
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect(await raw.keys(`${keyPrefix}*`)).toEqual([`${keyPrefix}bc-authorize:client:app-1`]);
    await a.netauth.close();
    await b.netauth.close();
  });

  it("backend 'memory' keeps the counters per instance, even with a RedisStore", async () => {
    const [a, b, prefix] = instances({ ...only({ bcAuthorize: { perClient: { points: 1, duration: 60 } } }), backend: 'memory' });
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect(await raw.keys(`${prefix}rl:*`)).toEqual([]);
  });

  it('Redis unreachable: each instance counts for itself meanwhile (nothing fails open, nothing hangs)', async () => {
    const own = await RedisServer.start();
    const client = createClient({ url: own.url, disableOfflineQueue: true, socket: { reconnectStrategy: () => 100 } });
    client.on('error', () => {});
    await client.connect();
    clients.push(client);
    try {
      const reported: unknown[] = [];
      const gw = createTestGateway({
        store: new MemoryStore(),
        rateLimits: { ...only({ bcAuthorize: { perClient: { points: 2, duration: 60 } } }), redis: client, timeout: 200 },
        onError: (error) => reported.push(error),
      });
      await own.stop();
      const started = Date.now();
      expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expectTooMany(await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP }));
      expect(Date.now() - started).toBeLessThan(2000);
      expect(reported).toEqual([]);
      await gw.netauth.close();
    } finally {
      await own.destroy();
    }
  });
});
