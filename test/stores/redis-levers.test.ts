import { afterAll, beforeAll, describe } from 'vitest';
import { RedisStore } from '../../lib/stores/redis.js';
import { RedisServer, freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import { IssueGate, describeLevers, leversGateway, sharedClock } from '../helpers/levers.js';

/**
 * Issue 43 on Redis: two gateways, as two instances of a fleet, each with its own RedisStore connection to one real
 * Redis, on one clock. A revocation on A is refused on B: at once where B's guard reads the store on every call,
 * within the stated 5 s where it reads the markers again at most that often (it had read Alice's before).
 */
const skip = skipRedisTests('the levers on two Redis-backed gateways');

describe.skipIf(skip)('two gateways on one Redis', () => {
  let server: RedisServer;

  beforeAll(async () => {
    requireRedisServer();
    server = await RedisServer.start();
  });

  afterAll(async () => {
    await server?.destroy();
  });

  describeLevers('two Redis-backed gateways', async (format) => {
    const clock = sharedClock();
    const gate = new IssueGate();
    const prefix = freshPrefix();
    const stores = [new RedisStore({ url: server.url, prefix }), new RedisStore({ url: server.url, prefix })];
    const [a, b] = stores.map((store) => leversGateway(clock, { accessTokenFormat: format, store: gate.wrap(store) }));
    return { a: a!, b: b!, clock, gate, close: async () => void (await Promise.all(stores.map((s) => s.close()))) };
  });
});
