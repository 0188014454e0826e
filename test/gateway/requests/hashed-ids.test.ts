import { describe, expect, it } from 'vitest';
import {
  MemoryStore,
  type JsonObject,
  type PutOptions,
  type RecordKind,
  type RecordWrite,
  type Store,
} from '../../../lib/index.js';
import { SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { CALLBACK, codeFor, redeem } from '../../helpers/frontend.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { redisServerMissing, skipRedisTests, useRedisServer } from '../../helpers/redis-server.js';
import { ask } from '../../helpers/redis-cluster.js';

/**
 * Issue 32, item 10: codes and auth_req_ids are stored under their SHA-256 (after the placement tag), so a leaked
 * store, a Redis KEYS listing or a backup holds none that could be redeemed or polled. Their single use and
 * concurrency are the grants' tests' (authorization-code, ciba); here both flows run end to end on each store.
 */

/** A memory store that keeps a copy of every id and record written to it. */
class RecordingStore extends MemoryStore {
  readonly written: string[] = [];

  override async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    this.written.push(JSON.stringify([kind, id, value]));
    return super.put(kind, id, value, options);
  }

  override async add(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<boolean> {
    this.written.push(JSON.stringify([kind, id, value]));
    return super.add(kind, id, value, options);
  }

  override async consume(kind: RecordKind, id: string, writes: readonly RecordWrite[] = []): Promise<boolean> {
    this.written.push(JSON.stringify([kind, id, writes]));
    return super.consume(kind, id, writes);
  }
}

/** The secret part of a `<tag>.<random>` id: what must never be stored in clear. */
const secretOf = (id: string) => id.slice(id.indexOf('.') + 1);

/**
 * A code and an auth_req_id, each used as a client would (the auth_req_id polled while pending, approved, then
 * exchanged); then `stored()`, everything the store holds or was given, must contain neither.
 */
async function flows(store: Store, stored: () => Promise<string[]>): Promise<void> {
  // No rate limits: nothing here is about them, and on Redis a slow counter would refuse (the lock-out fails closed).
  const gw = createTestGateway({
    store,
    rateLimits: false,
    backchannel: { authorize: () => new Promise(() => undefined) },
  });
  const code = await codeFor(gw, { scope: SIM_SWAP });
  const authReqId = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
  expect((await pollToken(gw.app, authReqId)).body.error).toBe('authorization_pending');
  expect(await gw.netauth.backchannel.approve(authReqId)).toBe(true);
  gw.clock.advance(5);

  const everything = (await stored()).join('\n');
  for (const secret of [code, authReqId].map(secretOf)) {
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(everything).not.toContain(secret);
  }
  // Found by their hash, used once.
  const redeemed = await redeem(gw.app, { code, redirect_uri: CALLBACK });
  expect(redeemed.status).toBe(200);
  const polled = await pollToken(gw.app, authReqId);
  expect(polled.status).toBe(200);
  // The redemption records kept for a retry hold no token (a retry derives them again): neither a token nor the code
  // is readable.
  const redeemedRecords = (await stored()).join('\n');
  for (const secret of [code, authReqId].map(secretOf)) expect(redeemedRecords).not.toContain(secret);
  for (const token of [redeemed.body.access_token, polled.body.access_token] as string[])
    expect(redeemedRecords).not.toContain(token.slice(token.indexOf('.') + 1));
  // Past lifetimes.redemptionRetry: used.
  gw.clock.advance(31);
  expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).body.error).toBe('invalid_grant');
  expect((await pollToken(gw.app, authReqId)).body.error).toBe('invalid_grant');
  const after = (await stored()).join('\n');
  for (const secret of [code, authReqId].map(secretOf)) expect(after).not.toContain(secret);
}

describe('codes and auth_req_ids stored hashed', () => {
  it('[memory] no id or record written holds a code or an auth_req_id', async () => {
    const store = new RecordingStore();
    await flows(store, async () => store.written);
  });
});

const skipRedis = skipRedisTests('the hashed ids on Redis');

describe.skipIf(skipRedis)(
  `codes and auth_req_ids stored hashed on Redis${skipRedis ? ` (skipped: ${redisServerMissing()})` : ''}`,
  () => {
    const redis = useRedisServer();

    it('[redis] no key (KEYS) and no value holds a code or an auth_req_id', async () => {
      const store = redis.store();
      const { prefix } = store;
      const server = redis.server();
      await flows(store, async () => {
        const keys = (await ask(server, ['KEYS', `${prefix}*`])) as string[];
        const values = await Promise.all(
          keys.map(async (key) =>
            (await ask(server, ['TYPE', key])) === 'string' ? String(await ask(server, ['GET', key])) : '',
          ),
        );
        return [...keys, ...values];
      });
    });
  },
);
