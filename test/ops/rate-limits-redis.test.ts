import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { createClient } from '../helpers/node-redis.js';
import { APP1, APP2, LOCATION, SIM_SWAP, basic, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { bcAuthorize, pollToken, startBackchannel } from '../helpers/requests.js';
import { CALLBACK, codeFor, redeem } from '../helpers/frontend.js';
import { recordEvents } from '../helpers/events.js';
import { expectTooMany, only } from '../helpers/rate-limits.js';
import {
  MemoryStore,
  RateLimitFallbackError,
  RedisStore,
  type NetAuthOptions,
  type RateLimitOptions,
} from '../../lib/index.js';
import { MAX_AHEAD, NO_REQUEST_LIMITS, RateLimits } from '../../lib/ops/rate-limits.js';
import { EventHub } from '../../lib/ops/events.js';
import {
  RedisServer,
  freshPrefix,
  redisServerMissing,
  requireRedisServer,
  skipRedisTests,
} from '../helpers/redis-server.js';
import { wrapStore } from '../helpers/store-wrapper.js';

/**
 * The Redis backend of the rate limits against a real redis-server: the counters are shared by every instance
 * on the same Redis and prefix (the RedisStore's own client by default, or a node-redis client given), and
 * each instance counts for itself while Redis is unreachable.
 */

const skip = skipRedisTests('the Redis rate-limit tests');
const ALICE = 'tel:+34600000001';

type RawClient = ReturnType<typeof createClient>;

const from = (app: Express, ip: string, authorization: string) =>
  request(app)
    .post('/apigateway/bc-authorize')
    .set('X-Forwarded-For', ip)
    .set('Authorization', authorization)
    .type('form')
    .send({ login_hint: ALICE, scope: SIM_SWAP });

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

  /** A Redis server of the test's own, to stop and restart, and a client of it that reconnects every 100 ms. */
  async function ownRedis(): Promise<{ own: RedisServer; client: RawClient }> {
    const own = await RedisServer.start();
    const client: RawClient = createClient({
      url: own.url,
      disableOfflineQueue: true,
      socket: { reconnectStrategy: () => 100 },
    });
    client.on('error', () => {});
    await client.connect();
    clients.push(client);
    return { own, client };
  }

  /** Two gateway instances on one Redis and prefix, as behind a load balancer. */
  function instances(
    rateLimits: RateLimitOptions,
    extra: Partial<NetAuthOptions> = {},
    storeTimeout = 1000,
  ): [TestGateway, TestGateway, string] {
    const prefix = freshPrefix('netauth-rl');
    const make = () => {
      const store = new RedisStore({ url: server.url, prefix, timeout: storeTimeout });
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
    expect(keys.sort()).toEqual([`${prefix}rl:bc-authorize:client:{app-1}`, `${prefix}rl:bc-authorize:client:{app-2}`]);
    for (const key of keys) expect(Number(await raw.pTTL(key))).toBeGreaterThan(0);
  });

  it("per client and subscriber, shared by the instances: one client's traffic leaves the other's allowance and the ceiling alone", async () => {
    const [a, b, prefix] = instances(
      only({
        bcAuthorize: {
          perClientAndSubscriber: { points: 2, duration: 600 },
          perSubscriber: { points: 3, duration: 600 },
        },
      }),
    );
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expectTooMany(await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
    expectTooMany(await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP }, APP2));
    const keys = (await raw.keys(`${prefix}rl:*`)).sort();
    expect(keys).toEqual([
      `${prefix}rl:bc-authorize:client-subscriber:{sub-alice}app-1`,
      `${prefix}rl:bc-authorize:client-subscriber:{sub-alice}app-2`,
      `${prefix}rl:bc-authorize:subscriber:{sub-alice}`,
    ]);
    // Three served and app-2's refused one; app-1's two refused requests never reached the ceiling.
    expect(await raw.get(`${prefix}rl:bc-authorize:subscriber:{sub-alice}`)).toBe('4');
  });

  it('the client-authentication lock-out is shared: failures for a client at an address on one instance lock that pair on the other', async () => {
    const [a, b, prefix] = instances(
      only({
        clientAuthentication: {
          perClientAndAddress: { failures: 2, duration: 900 },
          perAddress: { failures: 2, duration: 900 },
        },
      }),
    );
    const events = recordEvents(b.netauth);
    expect((await from(a.app, '203.0.113.20', basic('app-1', 'wrong'))).status).toBe(401);
    expect((await from(b.app, '203.0.113.20', basic('app-1', 'wrong'))).status).toBe(401);
    expectTooMany(await from(b.app, '203.0.113.20', APP1));
    expectTooMany(await from(a.app, '203.0.113.20', APP1));
    expect(events.of('rate.limited')).toEqual([
      { endpoint: 'bc-authorize', limit: 'client_authentication', clientId: 'app-1', retryAfter: expect.any(Number) },
    ]);
    // The client elsewhere, and another client at that address, are served on either instance.
    expect((await from(b.app, '203.0.113.21', APP1)).status).toBe(200);
    expect((await from(a.app, '203.0.113.20', APP2)).status).toBe(200);
    // Unknown ids count per address, shared too.
    expect((await from(a.app, '203.0.113.22', basic('nobody', 'x'))).status).toBe(401);
    expect((await from(b.app, '203.0.113.22', basic('nobody-else', 'x'))).status).toBe(401);
    expectTooMany(await from(a.app, '203.0.113.22', basic('nobody', 'x')));
    const keys = (await raw.keys(`${prefix}rl:auth-failures:*`)).sort();
    expect(keys).toEqual([
      `${prefix}rl:auth-failures:address:{203.0.113.22}`,
      `${prefix}rl:auth-failures:client-address:{app-1}203.0.113.20`,
    ]);
  });

  it('concurrent guesses spread over two instances never get more comparisons than the budget', async () => {
    const [a, b] = instances(only({ clientAuthentication: { perClientAndAddress: { failures: 5, duration: 900 } } }));
    let failed = 0;
    for (const gw of [a, b]) gw.netauth.events.on('client.authentication_failed', () => failed++);
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        from(i % 2 ? a.app : b.app, '203.0.113.30', basic('app-1', `guess-${i}`)).then((r) => r.status),
      ),
    );
    expect(answers.filter((s) => s === 401)).toHaveLength(5);
    expect(failed).toBe(5);
    expect(answers.filter((s) => s === 429)).toHaveLength(55);
  });

  it('the token subscriber limit holds across instances for codes; CIBA polls are not counted per subscriber', async () => {
    const [a, b] = instances(only({ token: { perSubscriber: { points: 1, duration: 60 }, perClient: false } }));
    const first = await codeFor(a);
    const second = await codeFor(b);
    expect((await redeem(a.app, { code: first, redirect_uri: CALLBACK })).status).toBe(200);
    expectTooMany(await redeem(b.app, { code: second, redirect_uri: CALLBACK }));
    // The same subscriber's CIBA request polls on both instances, paced by its interval only.
    const id = await startBackchannel(a.app, ALICE, LOCATION);
    expect((await pollToken(a.app, id)).body.error).toBe('authorization_pending');
    a.clock.advance(2);
    b.clock.advance(2);
    expect((await pollToken(b.app, id)).body.error).toBe('authorization_pending');
  });

  it('rateLimits.redis: counters on a node-redis client given, with a memory store and a key prefix', async () => {
    const client = createClient({ url: server.url, disableOfflineQueue: true });
    client.on('error', () => {});
    await client.connect();
    clients.push(client);
    const keyPrefix = freshPrefix('rl-given');
    const rateLimits = {
      ...only({ bcAuthorize: { perClient: { points: 1, duration: 60 } } }),
      redis: client,
      keyPrefix,
    };
    const a = createTestGateway({ store: new MemoryStore(), rateLimits });
    const b = createTestGateway({ store: new MemoryStore(), rateLimits });
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect(await raw.keys(`${keyPrefix}*`)).toEqual([`${keyPrefix}bc-authorize:client:{app-1}`]);
    await a.netauth.close();
    await b.netauth.close();
  });

  it('a custom store shares its counters through the store contract (counters()), not as a RedisStore', async () => {
    const prefix = freshPrefix('netauth-rl-custom');
    const rateLimits = only({ bcAuthorize: { perClient: { points: 2, duration: 60 } } });
    const make = (shares: boolean) => {
      const inner = new RedisStore({ url: server.url, prefix, timeout: 1000 });
      stores.push(inner);
      const store = wrapStore(inner, shares ? { counters: () => inner.counters() } : {});
      expect(store).not.toBeInstanceOf(RedisStore);
      return createTestGateway({ store, rateLimits });
    };
    const [a, b] = [make(true), make(true)];
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expectTooMany(await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect(await raw.keys(`${prefix}rl:*`)).toEqual([`${prefix}rl:bc-authorize:client:{app-1}`]);
    // Without counters() the same store leaves each instance counting for itself.
    const [c, d] = [make(false), make(false)];
    await raw.del(`${prefix}rl:bc-authorize:client:{app-1}`);
    for (const gateway of [c, d, c, d]) {
      expect((await bcAuthorize(gateway.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    }
    expectTooMany(await bcAuthorize(c.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect(await raw.keys(`${prefix}rl:*`)).toEqual([]);
    for (const gateway of [a, b, c, d]) await gateway.netauth.close();
  });

  it("backend 'memory' keeps the counters per instance, even with a RedisStore", async () => {
    const [a, b, prefix] = instances({
      ...only({ bcAuthorize: { perClient: { points: 1, duration: 60 } } }),
      backend: 'memory',
    });
    expect((await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(b.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(a.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect(await raw.keys(`${prefix}rl:*`)).toEqual([]);
  });

  it('Redis unreachable: each instance counts for itself meanwhile and says so (rate.fallback), then counts in Redis again once it is back', async () => {
    const { own, client } = await ownRedis();
    try {
      const reported: unknown[] = [];
      const keyPrefix = freshPrefix('rl-down');
      const gw = createTestGateway({
        store: new MemoryStore(),
        rateLimits: {
          ...only({ bcAuthorize: { perClient: { points: 2, duration: 60 } } }),
          redis: client,
          keyPrefix,
          // Long enough for a loaded machine once Redis is back (a timeout there would be told as one more event).
          timeout: 1000,
        },
        onError: (error) => reported.push(error),
      });
      const events = recordEvents(gw.netauth);
      await own.stop();
      const started = Date.now();
      expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expectTooMany(await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP }));
      // Nothing waits for the Redis that is gone.
      expect(Date.now() - started).toBeLessThan(2000);
      // Told once, not once per request; an outage is not an internal error.
      expect(events.of('rate.fallback')).toEqual([{ state: 'failing', cause: 'unavailable', operations: 1 }]);
      expect(reported).toEqual([]);

      await own.restart();
      await vi.waitFor(() => expect(client.isReady).toBe(true), { timeout: 10_000 });
      // Shared again: APP2's request counts in Redis, and the two requests counted in memory meanwhile are told.
      expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
      expect(await client.get(`${keyPrefix}bc-authorize:client:{app-2}`)).toBe('1');
      expect(events.of('rate.fallback')).toEqual([
        { state: 'failing', cause: 'unavailable', operations: 1 },
        { state: 'recovered', cause: 'unavailable', operations: 2 },
      ]);
      await gw.netauth.close();
    } finally {
      await own.destroy();
    }
  });

  it("a Redis failure that goes on is told again once a minute of the gateway's clock has passed, not before", async () => {
    const { own, client } = await ownRedis();
    try {
      const gw = createTestGateway({
        store: new MemoryStore(),
        rateLimits: { ...only({ bcAuthorize: { perClient: { points: 100, duration: 600 } } }), redis: client },
      });
      const events = recordEvents(gw.netauth);
      await own.stop();
      const served = async () =>
        expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      await served();
      await served();
      gw.clock.advance(59);
      await served();
      expect(events.of('rate.fallback')).toEqual([{ state: 'failing', cause: 'unavailable', operations: 1 }]);
      gw.clock.advance(1);
      await served();
      // The counts made in memory since the first report go with the second.
      expect(events.of('rate.fallback')).toEqual([
        { state: 'failing', cause: 'unavailable', operations: 1 },
        { state: 'failing', cause: 'unavailable', operations: 3 },
      ]);
      await gw.netauth.close();
    } finally {
      await own.destroy();
    }
  });

  it('Redis counters stalled (CLIENT PAUSE): two gateways together compare no more guesses than the budget', async () => {
    // Issue 32, finding 7: a per-process fallback gave each instance a budget of its own; now the lock-out refuses.
    const budget = 5;
    const rules = only({ clientAuthentication: { perClientAndAddress: { failures: budget, duration: 900 } } });
    // The store's own deadline past the pause: the counters' is the one that ends the wait (a reservation waits 2 s).
    const [a, b] = instances({ ...rules, timeout: 200 }, {}, 5000);
    const fallbacks = [recordEvents(a.netauth), recordEvents(b.netauth)];
    const paused = await raw.sendCommand(['CLIENT', 'PAUSE', '3000', 'ALL']);
    expect(paused).toBe('OK');
    try {
      const guess = (gw: TestGateway, i: number) => from(gw.app, '198.51.100.9', basic('app-1', `guess-${i}`));
      const guesses = [a, b].flatMap((gw) => Array.from({ length: 20 }, (_, i) => guess(gw, i)));
      const statuses = (await Promise.all(guesses)).map((r) => r.status);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(budget);
      // Refused while Redis does not answer (503), or locked once the budget is spent (429).
      expect(statuses.filter((s) => s !== 401 && s !== 429 && s !== 503)).toEqual([]);
      // Told with its true cause: Redis is up, but did not answer in time.
      for (const events of fallbacks) {
        expect(events.of('rate.fallback')[0]).toMatchObject({ state: 'failing', cause: 'timeout' });
      }
    } finally {
      await raw.sendCommand(['CLIENT', 'UNPAUSE']);
    }
  });

  it('an ACL that refuses the scripts is reported to onError too, not hidden (the limits then hold per instance)', async () => {
    const user = `rl-noperm-${randomUUID().slice(0, 8)}`;
    expect(
      await raw.sendCommand([
        'ACL',
        'SETUSER',
        user,
        'on',
        '>pw',
        'resetkeys',
        '~*',
        '-@all',
        '+@connection',
        '+get',
        '+set',
      ]),
    ).toBe('OK');
    const client = createClient({ url: `redis://${user}:pw@127.0.0.1:${server.port}`, disableOfflineQueue: true });
    client.on('error', () => {});
    await client.connect();
    clients.push(client);
    const reported: unknown[] = [];
    const gw = createTestGateway({
      store: new MemoryStore(),
      rateLimits: { ...only({ bcAuthorize: { perClient: { points: 1, duration: 60 } } }), redis: client },
      onError: (error) => reported.push(error),
    });
    const events = recordEvents(gw.netauth);
    expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expectTooMany(await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP }));
    expect(events.of('rate.fallback')).toEqual([{ state: 'failing', cause: 'error', operations: 1 }]);
    expect(reported).toHaveLength(1);
    expect(reported[0]).toBeInstanceOf(RateLimitFallbackError);
    expect((reported[0] as Error).message).toMatch(
      new RegExp(
        `^rate limits: Redis at 127\\.0\\.0\\.1:${server.port} refused the counters' script \\(NOPERM .*evalsha.*\\): each instance counts for itself until that is fixed$`,
        'i',
      ),
    );
    await gw.netauth.close();
  });

  it('while Redis fails a lock-out slot is refused (503, Retry-After: 1), not counted here; then served', async () => {
    const { own, client } = await ownRedis();
    try {
      const keyPrefix = freshPrefix('rl-held');
      const gw = createTestGateway({
        store: new MemoryStore(),
        rateLimits: {
          ...only({ clientAuthentication: { perClientAndAddress: { failures: 30, duration: 900 } } }),
          redis: client,
          keyPrefix,
          timeout: 200,
        },
      });
      const introspect = () =>
        request(gw.app)
          .post('/apigateway/introspect')
          .set('X-Forwarded-For', '203.0.113.41')
          .set('Authorization', APP2)
          .type('form')
          .send({ token: 'x' });
      await own.stop();
      // Fails closed: a per-process count would give each instance a budget of its own. Answered as an outage,
      // not as a lock-out: nothing is known against the client.
      const refused = await introspect();
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers['cache-control']).toBe('no-store');
      expect(refused.body).toEqual({
        error: 'temporarily_unavailable',
        error_description: 'the service is temporarily unavailable',
      });
      await own.restart();
      await vi.waitFor(() => expect(client.isReady).toBe(true), { timeout: 10_000 });
      expect((await introspect()).status).toBe(200);
      // Its slot was counted in Redis, where every instance sees it.
      expect(await client.get(`${keyPrefix}auth-attempts:client-address:{app-2}203.0.113.41`)).toBe('1');
      await gw.netauth.close();
    } finally {
      await own.destroy();
    }
  });

  it('a client that has not failed pays no round trip for the lock-out: its slot is held for the next check, and given back on close', async () => {
    const [a, , prefix] = instances(
      only({ clientAuthentication: { perClientAndAddress: { failures: 30, duration: 900 } } }),
    );
    const attempts = `${prefix}rl:auth-attempts:client-address:{app-2}203.0.113.40`;
    const introspect = () =>
      request(a.app)
        .post('/apigateway/introspect')
        .set('X-Forwarded-For', '203.0.113.40')
        .set('Authorization', APP2)
        .type('form')
        .send({ token: 'x' });
    expect((await introspect()).status).toBe(200);
    // The first check took a slot; it stays counted (held), so every check is still bounded by the budget.
    expect(await raw.get(attempts)).toBe('1');
    const monitor = raw.duplicate();
    monitor.on('error', () => {});
    await monitor.connect();
    clients.push(monitor);
    const seen: string[] = [];
    // The gateway's scripts on the rate-limit keys (not the commands they run, nor this test's reads).
    await monitor.monitor((line) => {
      if (/ "EVAL(SHA)?" /.test(line) && line.includes(`${prefix}rl:`)) seen.push(line);
    });
    // MONITOR's last lines may still be on their way.
    const settled = () => new Promise((resolve) => setTimeout(resolve, 100));
    for (let i = 0; i < 10; i++) expect((await introspect()).status).toBe(200);
    await settled();
    expect(seen).toEqual([]);
    expect(await raw.get(attempts)).toBe('1');
    // A wrong secret from there uses the held slot and is counted as a failure: its one script is all MONITOR sees (EVAL too if Redis did not know it yet).
    expect(
      (
        await request(a.app)
          .post('/apigateway/introspect')
          .set('X-Forwarded-For', '203.0.113.40')
          .set('Authorization', basic('app-2', 'wrong'))
          .type('form')
          .send({ token: 'x' })
      ).status,
    ).toBe(401);
    await settled();
    expect(seen.length).toBeGreaterThan(0);
    for (const line of seen)
      expect(line).toContain(`"1" "${prefix}rl:auth-failures:client-address:{app-2}203.0.113.40"`);
    expect(await raw.get(`${prefix}rl:auth-failures:client-address:{app-2}203.0.113.40`)).toBe('1');
    expect((await introspect()).status).toBe(200);
    expect(await raw.get(attempts)).toBe('2');
    await a.netauth.close();
    expect(await raw.get(attempts)).toBe('1');
  });

  it("a client's limit: each instance takes 1 % of the points at once; across instances no more than the limit is served", async () => {
    const [a, b, prefix] = instances(only({ token: { perClient: { points: 200, duration: 60 } } }));
    const poll = (gw: TestGateway) => pollToken(gw.app, 'unknown-auth-req-id').then((r) => r.body.error as string);
    const answers: string[] = [];
    for (let i = 0; i < 260; i++) answers.push(await poll(i % 2 === 0 ? a : b));
    const served = answers.filter((e) => e === 'invalid_grant').length;
    expect(answers.filter((e) => e !== 'invalid_grant' && e !== 'slow_down')).toEqual([]);
    // Two points at a time per instance: at most 2 - 1 of them left unused on each when the limit is reached.
    expect(served).toBeLessThanOrEqual(200);
    expect(served).toBeGreaterThanOrEqual(198);
    expect(Number(await raw.get(`${prefix}rl:token:client:{app-1}`))).toBeGreaterThanOrEqual(200);
  });

  it("points taken ahead are used only until their window ends by the gateway's clock", async () => {
    const [gw, , prefix] = instances(only({ token: { perClient: { points: 200, duration: 60 } } }));
    const counted = async () => Number(await raw.get(`${prefix}rl:token:client:{app-1}`));
    const poll = async () => expect((await pollToken(gw.app, 'unknown-auth-req-id')).body.error).toBe('invalid_grant');
    // Two points taken at once (1 % of 200). The second request uses the one left and asks for the next two as it
    // does (sent with its own commands); the third uses one of those and sends nothing for its count.
    await poll();
    expect(await counted()).toBe(2);
    await poll();
    await expect.poll(counted).toBe(4);
    await poll();
    expect(await counted()).toBe(4);
    // The window's end (less the margin for Redis' clock) passed on the injected clock: the point left is not used.
    gw.clock.advance(59);
    await poll();
    expect(await counted()).toBe(6);
  });

  it('points asked for ahead and refused: the refusal is answered while its wait lasts, never after it', async () => {
    const [gw, , prefix] = instances(only({ token: { perClient: { points: 200, duration: 60 } } }));
    const key = `${prefix}rl:token:client:{app-1}`;
    const poll = () => pollToken(gw.app, 'unknown-auth-req-id');
    const usedUp = () => raw.set(key, '200', { KEEPTTL: true });
    expect((await poll()).body.error).toBe('invalid_grant');
    // Another instance used the rest of the window: the point left serves, and the next two are refused meanwhile.
    await usedUp();
    expect((await poll()).body.error).toBe('invalid_grant');
    // The window ended (on the gateway's clock, and in Redis) before the next request: asked for again, and served.
    gw.clock.advance(61);
    await raw.del(key);
    expect((await poll()).body.error).toBe('invalid_grant');
    expect(await raw.get(key)).toBe('2');
    await usedUp();
    expect((await poll()).body.error).toBe('invalid_grant');
    const refused = await poll();
    expect(refused.body.error).toBe('slow_down');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('points taken ahead for more than MAX_AHEAD clients: the oldest entry is forgotten first, the newest kept', async () => {
    const prefix = freshPrefix('netauth-rl');
    const store = new RedisStore({ url: server.url, prefix });
    stores.push(store);
    const reported: unknown[] = [];
    const onError = (error: unknown) => void reported.push(error);
    const limits = new RateLimits(
      { ...NO_REQUEST_LIMITS, token: { perClient: { points: 200, duration: 600 } }, timeout: 5000 },
      store,
      onError,
      new EventHub(onError),
    );
    const counted = async (id: string) => Number(await raw.get(`${prefix}rl:token:client:{${id}}`));
    // One client more than the entries kept, each taking two points (one left ahead), in order.
    await limits.client('token', 'c0');
    // In batches: one connection answers in the order asked, so the entries are made in this order.
    for (let first = 1; first <= MAX_AHEAD; first += 1000) {
      const ids = Array.from({ length: Math.min(1000, MAX_AHEAD + 1 - first) }, (_, i) => `c${first + i}`);
      expect(await Promise.all(ids.map((id) => limits.client('token', id)))).toEqual(ids.map(() => undefined));
    }
    // The second oldest and the newest still have their point left here: each uses it and asks for two more as it
    // does, then uses one of those.
    for (const id of ['c1', `c${MAX_AHEAD}`]) {
      await limits.client('token', id);
      await limits.client('token', id);
      expect(await counted(id)).toBe(4);
    }
    // The oldest was forgotten: its next request takes two more points, and the one after asks for two more again.
    await limits.client('token', 'c0');
    expect(await counted('c0')).toBe(4);
    await limits.client('token', 'c0');
    await expect.poll(() => counted('c0')).toBe(6);
    expect(reported).toEqual([]);
    await limits.close();
  });
});
