/**
 * REDIS_URL: the demo's gateway keeps its state in the package's RedisStore and the app its sessions in
 * connect-redis. One frontend flow over HTTP proves both are wired (the consent page's session, the code,
 * the consent record, the app's session with the token).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../helpers/node-redis.js';
import { resolveConfig } from '../../demo-app/config.js';
import { DemoStartError, startDemo, type RunningDemo } from '../../demo-app/start.js';
import { verifyNumber } from '../helpers/demo.js';
import { RedisServer, redisServerMissing } from '../helpers/redis-server.js';

const missing = redisServerMissing();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`Skipping the demo's Redis test: ${missing}`);

const config = () => resolveConfig({ host: '127.0.0.1', ports: { gateway: 0, app: 0 } }, 'test');

describe.skipIf(skip)('demo with REDIS_URL', () => {
  let server: RedisServer;
  let demo: RunningDemo;

  beforeAll(async () => {
    if (missing) throw new Error(`${missing}; with CI=true the Redis tests must run`);
    server = await RedisServer.start();
    demo = await startDemo(config(), { redisUrl: server.url });
  });
  afterAll(async () => {
    await demo?.close();
    await server?.destroy();
  });

  it('runs the frontend flow with both sides on Redis', async () => {
    expect(demo.stores).toBe('redis');
    const done = await verifyNumber(demo);
    expect(done.finalUrl.pathname).toBe('/verified');
    expect(done.page).toContain('Number verified');

    const redis = createClient({ url: server.url });
    await redis.connect();
    try {
      expect((await redis.keys('netauth-demo:sess:*')).length).toBeGreaterThan(0);
      // One consent record (kind letter k, under the client's and subscriber's placement tag), beside the
      // subscriber's index of them.
      const consents = await redis.keys('netauth-demo:k.*');
      expect(consents.filter((key) => !key.includes('index|'))).toHaveLength(1);
    } finally {
      await redis.close();
    }
  });

  it('an unreachable Redis is one clear start-up error, naming the host and not the password', async () => {
    const error = await startDemo(config(), { redisUrl: 'redis://demo:s3cret@127.0.0.1:1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DemoStartError);
    expect((error as Error).message).toBe('REDIS_URL: cannot connect to Redis at 127.0.0.1:1 (ECONNREFUSED)');
  });
});
