import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import type request from 'supertest';
import { RedisStore, type NetAuthOptions, type RateLimitOptions } from '../../lib/index.js';
import { createTestGateway, type TestGateway, type TestGatewaySetup } from './gateway.js';
import { RedisServer, freshPrefix, redisServerMissing, requireRedisServer, skipRedisTests } from './redis-server.js';

/**
 * A rate limit's or the lock-out's refusal: 429 `temporarily_unavailable` as JSON, never cached, with a whole
 * `Retry-After` of at least a second and at most `maxWait` (the window's length, where the test knows it).
 */
export function expectTooMany(res: request.Response, maxWait = Number.POSITIVE_INFINITY): void {
  expect(res.status).toBe(429);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
  const wait = Number(res.headers['retry-after']);
  expect(Number.isInteger(wait)).toBe(true);
  expect(wait).toBeGreaterThanOrEqual(1);
  expect(wait).toBeLessThanOrEqual(maxWait);
}

/** Every limit off except the ones given: each rate-limit test looks at one limit. */
export function only(limits: RateLimitOptions): RateLimitOptions {
  return {
    ...limits,
    authorize: { perAddress: false, ...limits.authorize },
    bcAuthorize: { perClient: false, perClientAndSubscriber: false, perSubscriber: false, ...limits.bcAuthorize },
    token: { perClient: false, perClientAndSubscriber: false, perSubscriber: false, ...limits.token },
    clientAuthentication: { perClientAndAddress: false, perAddress: false, ...limits.clientAuthentication },
  };
}

/** Where a suite's counters live: `gateway()` makes a test gateway counting there. */
export interface CounterBackend {
  name: 'memory' | 'redis';
  gateway(overrides?: Partial<NetAuthOptions>, setup?: TestGatewaySetup): TestGateway;
}

/**
 * Runs `suite` once per backend of the rate limits, so both are held to the same tests: the memory counters,
 * and the Redis counters (each gateway on a RedisStore of its own prefix, on a redis-server started for the
 * suite). On Redis every test also checks that nothing was reported (`onError`, `rate.fallback`): no count fell
 * back to this process's memory.
 */
export function describeEachBackend(title: string, suite: (backend: CounterBackend) => void): void {
  describe(`${title} [memory]`, () => suite({ name: 'memory', gateway: createTestGateway }));

  const skip = skipRedisTests(`${title} on Redis`);
  describe.skipIf(skip)(`${title} [redis]${skip ? ` (skipped: ${redisServerMissing()})` : ''}`, () => {
    let server: RedisServer;
    const stores: RedisStore[] = [];
    let reported: unknown[] = [];
    beforeAll(async () => {
      requireRedisServer();
      server = await RedisServer.start();
    });
    afterEach(() => {
      const errors = reported;
      reported = [];
      expect(errors).toEqual([]);
    });
    afterAll(async () => {
      for (const store of stores) await store.close();
      await server?.destroy();
    });
    suite({
      name: 'redis',
      gateway(overrides = {}, setup) {
        const store = new RedisStore({ url: server.url, prefix: freshPrefix('netauth-rl') });
        stores.push(store);
        // These suites are about the counts, not the counters' timeout (rate-limits-redis.test.ts is): a loaded
        // machine may take longer than the default 500 ms to answer, which would count in memory instead.
        const rateLimits = overrides.rateLimits === false ? false : { timeout: 5000, ...overrides.rateLimits };
        const gw = createTestGateway(
          { store, onError: (error) => reported.push(error), ...overrides, rateLimits },
          setup,
        );
        gw.netauth.events.on('rate.fallback', (event) => void reported.push(event));
        return gw;
      },
    });
  });
}

/**
 * Lets `seconds` pass for a gateway's counters: its injected clock moves (the memory windows, points taken ahead,
 * held slots and local locks follow it). With Redis the windows are its keys' expiries, on Redis' own clock,
 * which no test can move: there the test also waits them out.
 */
export async function windowPassed(backend: CounterBackend, gw: TestGateway, seconds: number): Promise<void> {
  gw.clock.advance(seconds);
  if (backend.name === 'redis') await new Promise((resolve) => setTimeout(resolve, seconds * 1000 + 100));
}
