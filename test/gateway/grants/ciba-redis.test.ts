import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { CALLBACK, codeFor, redeem } from '../../helpers/frontend.js';
import { SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { bcAuthorize, pollToken, startBackchannel } from '../../helpers/requests.js';
import { redisServerMissing, skipRedisTests, useRedisServer } from '../../helpers/redis-server.js';

const skip = skipRedisTests('the Redis round trips of the CIBA and code grants (issue 46)');
const ALICE = { id: 'sub-alice', hint: 'tel:+34600000001' };

/**
 * Issue 46 on a real Redis: what a flow costs in round trips (the batches of commands Redis reads, INFO
 * `total_reads_processed`: commands node-redis writes together are read at once), and that the commands sent side by
 * side keep every guarantee: the not-before markers read beside the consume still refuse a revoked subscriber with
 * nothing left behind, and bc-authorize's record written beside its subscriber limit is gone when the limit refuses.
 */
describe.skipIf(skip)(`round trips on Redis${skip ? ` (skipped: ${redisServerMissing()})` : ''}`, () => {
  const redis = useRedisServer();
  let admin: ReturnType<typeof createClient>;

  beforeAll(async () => {
    admin = createClient({ url: redis.server().url });
    admin.on('error', () => {});
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.close();
  });

  async function gateway(options: Parameters<typeof createTestGateway>[0] = {}) {
    const store = redis.store();
    await store.open();
    return { gw: createTestGateway({ store, ...options }), prefix: store.prefix };
  }

  /** Batches Redis read from its clients while `step` ran (this client's own INFO is one). */
  async function roundTrips(step: () => Promise<unknown>): Promise<number> {
    const reads = async () => Number(/total_reads_processed:(\d+)/.exec(await admin.info('stats'))![1]);
    const before = await reads();
    await step();
    return (await reads()) - before - 1;
  }

  /** The store's keys of a grant (by its placement tag), by kind letter (redis-keys.ts). */
  async function keysOf(prefix: string, tag: string): Promise<string[]> {
    const keys = await admin.keys(`${prefix}*{${tag}}*`);
    return keys.map((key) => key.slice(prefix.length, prefix.length + 1)).sort();
  }

  it('with the default rate limits: bc-authorize is one round trip, the approved poll two (the request, then the markers beside the consume)', async () => {
    const { gw } = await gateway();
    // The first flow takes the client's limits ahead and the lock-out slot: not what a flow costs.
    const first = await startBackchannel(gw.app, ALICE.hint, SIM_SWAP);
    expect((await pollToken(gw.app, first)).status).toBe(200);

    let authReqId = '';
    const authorizeTrips = await roundTrips(async () => {
      authReqId = await startBackchannel(gw.app, ALICE.hint, SIM_SWAP);
    });
    let status = 0;
    const pollTrips = await roundTrips(async () => {
      status = (await pollToken(gw.app, authReqId)).status;
    });
    expect(status).toBe(200);
    expect({ authorizeTrips, pollTrips }).toEqual({ authorizeTrips: 1, pollTrips: 2 });
  });

  it('rate limits off: the code redemption is two round trips (the code, then the markers beside the consume)', async () => {
    const { gw } = await gateway({ rateLimits: false });
    const first = await codeFor(gw, { scope: SIM_SWAP });
    expect((await redeem(gw.app, { code: first, redirect_uri: CALLBACK })).status).toBe(200);
    const code = await codeFor(gw, { scope: SIM_SWAP });
    let status = 0;
    const trips = await roundTrips(async () => {
      status = (await redeem(gw.app, { code, redirect_uri: CALLBACK })).status;
    });
    expect(status).toBe(200);
    expect(trips).toBe(2);
  });

  it('a revoked subscriber: the approved poll is invalid_grant, and no token, refresh token or redemption of it is left', async () => {
    const { gw, prefix } = await gateway();
    const authReqId = await startBackchannel(gw.app, ALICE.hint, SIM_SWAP);
    gw.clock.advance(1);
    await gw.netauth.subscribers.revoke(ALICE.id, { reason: 'number_recycled' });
    for (let i = 0; i < 2; i++) {
      const res = await pollToken(gw.app, authReqId);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_grant' });
      expect(res.body.access_token).toBeUndefined();
    }
    // The request (b) and its grant's index (g); no access token (t), refresh token (f) or redemption (d).
    const tag = authReqId.slice(0, authReqId.indexOf('.'));
    expect((await keysOf(prefix, tag)).filter((kind) => kind !== 'g')).toEqual(['b']);
  });

  it('a revoked subscriber, rate limits off (the markers read beside the consume): the code is invalid_grant, nothing of it is left', async () => {
    const { gw, prefix } = await gateway({ rateLimits: false });
    const code = await codeFor(gw, { scope: SIM_SWAP });
    gw.clock.advance(1);
    await gw.netauth.subscribers.revoke(ALICE.id, { reason: 'number_recycled' });
    for (let i = 0; i < 2; i++) {
      const res = await redeem(gw.app, { code, redirect_uri: CALLBACK });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_grant' });
    }
    const tag = code.slice(0, code.indexOf('.'));
    expect((await keysOf(prefix, tag)).filter((kind) => kind !== 'g')).toEqual(['c']);
  });

  it("bc-authorize over the subscriber's limit: 429, and the request written beside the count is deleted", async () => {
    const { gw, prefix } = await gateway({
      rateLimits: { bcAuthorize: { perClientAndSubscriber: { points: 1, duration: 600 } } },
    });
    await startBackchannel(gw.app, ALICE.hint, SIM_SWAP);
    const refused = await bcAuthorize(gw.app, { login_hint: ALICE.hint, scope: SIM_SWAP });
    expect(refused.status).toBe(429);
    expect(refused.body.auth_req_id).toBeUndefined();
    expect(await admin.keys(`${prefix}b.*`)).toHaveLength(1);
  });
});
