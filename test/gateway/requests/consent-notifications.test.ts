import { hashedRecordId } from '../../../lib/crypto.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { type BackchannelRequest, type RegisteredClient, MemoryStore, type Store } from '../../../lib/index.js';
import { claimConsentNotification } from '../../../lib/gateway/requests/consent-notifications.js';
import type { BackchannelRecord } from '../../../lib/gateway/requests/backchannel-requests.js';
import { APP2, CIBA, CLIENTS, LOCATION, SIM_SWAP, basic, createTestGateway } from '../../helpers/gateway.js';
import { bcAuthorize, pollToken, startBackchannel } from '../../helpers/requests.js';
import { wrapStore } from '../../helpers/store-wrapper.js';
import { skipRedisTests, useRedisServer } from '../../helpers/redis-server.js';

/**
 * CIBA consent notifications are deduplicated per (client, subscriber, purpose, scope) while one is pending
 * (docs/consent.md): each request gets its own auth_req_id, and the subscriber is told once.
 */

const ALICE = 'tel:+34600000001';
const APP3: RegisteredClient = {
  clientId: 'app-3',
  clientSecret: 'third-secret',
  grantTypes: [CIBA],
  scopes: [LOCATION],
};
const BOB = 'tel:+34600000002';
const skipRedis = skipRedisTests('CIBA notification dedup on Redis');

/** A gateway whose onConsentRequired records each notification, on `store`; `settled` waits for every claim. */
function gateway(store: Store) {
  let claims = 0;
  const watched = wrapStore(store, {
    add: async (kind, id, value, options) => {
      const added = await store.add(kind, id, value, options);
      if (id.startsWith('notify|')) claims++;
      return added;
    },
  });
  const told: BackchannelRequest[] = [];
  const gw = createTestGateway({
    store: watched,
    clients: [...CLIENTS, APP3],
    backchannel: { onConsentRequired: (req) => void told.push(req) },
  });
  /** Every request's claim has been made; then a moment for any hook call still on its way. */
  const settled = async (requests: number) => {
    await vi.waitFor(() => expect(claims).toBeGreaterThanOrEqual(requests));
    await sleep(50);
  };
  return { ...gw, told, settled };
}

async function fiftyAtOnce(store: Store): Promise<void> {
  const gw = gateway(store);
  const answers = await Promise.all(
    Array.from({ length: 50 }, () => bcAuthorize(gw.app, { login_hint: ALICE, scope: LOCATION })),
  );
  expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
  const ids = answers.map((r) => r.body.auth_req_id as string);
  expect(new Set(ids).size).toBe(50);
  await gw.settled(50);
  expect(gw.told).toHaveLength(1);
  expect(ids).toContain(gw.told[0]!.auth_req_id);
  // The one answer decides every request waiting on it.
  await gw.netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
  for (const id of [ids[0]!, ids[49]!]) expect((await pollToken(gw.app, id)).status).toBe(200);
}

describe('CIBA consent notifications, memory store', () => {
  it('50 parallel bc-authorize for one tuple: 50 auth_req_ids, one notification', async () => {
    await fiftyAtOnce(new MemoryStore());
  });

  it('another client or subscriber is another notification; the tuple is the scopes that need consent', async () => {
    const gw = gateway(new MemoryStore());
    await startBackchannel(gw.app, ALICE, LOCATION);
    await startBackchannel(gw.app, BOB, LOCATION);
    await startBackchannel(gw.app, ALICE, LOCATION, basic('app-3', 'third-secret'));
    // sim-swap rests on legitimate interest: the consent asked for is the same, device-location.
    await startBackchannel(gw.app, ALICE, `${LOCATION} sim-swap`);
    await gw.settled(4);
    expect(gw.told.map((r) => `${r.clientId} ${r.subscriber.id}`)).toEqual([
      'app-1 sub-alice',
      'app-1 sub-bob',
      'app-3 sub-alice',
    ]);
    // A request that needs no consent tells no one.
    await startBackchannel(gw.app, ALICE, SIM_SWAP, APP2);
    await sleep(50);
    expect(gw.told).toHaveLength(3);
  });

  it('once answered (refused, or granted then withdrawn) or expired, the next request notifies again, once', async () => {
    const gw = gateway(new MemoryStore({ now: () => gw.clock.now }));
    const consent = { clientId: 'app-1', login_hint: ALICE, scope: LOCATION };
    const first = await startBackchannel(gw.app, ALICE, LOCATION);
    await gw.settled(1);
    expect(gw.told).toHaveLength(1);

    gw.clock.advance(1);
    await gw.netauth.consent.deny(consent);
    gw.clock.advance(1);
    await Promise.all([startBackchannel(gw.app, ALICE, LOCATION), startBackchannel(gw.app, ALICE, LOCATION)]);
    await gw.settled(3);
    expect(gw.told).toHaveLength(2);

    // Granted: the request that sent it gets its token; withdrawn later, a new request tells the subscriber.
    await gw.netauth.consent.grant(consent);
    gw.clock.advance(5);
    expect((await pollToken(gw.app, gw.told[1]!.auth_req_id)).status).toBe(200);
    expect((await pollToken(gw.app, first)).status).toBe(200);
    await gw.netauth.consent.revoke(consent);
    await startBackchannel(gw.app, ALICE, LOCATION);
    await gw.settled(4);
    expect(gw.told).toHaveLength(3);

    // Expired unanswered: the next request tells again.
    gw.clock.advance(121);
    await startBackchannel(gw.app, ALICE, LOCATION);
    await gw.settled(5);
    expect(gw.told).toHaveLength(4);
  });
});

describe.skipIf(skipRedis)('CIBA consent notifications, Redis store', () => {
  const redis = useRedisServer();

  it('50 parallel bc-authorize for one tuple: 50 auth_req_ids, one notification', async () => {
    await fiftyAtOnce(redis.store());
  });

  it('50 claims at once, and 50 more once the first is answered: exactly one each time', async () => {
    const store = redis.store();
    const now = Date.now();
    const request = (authReqId: string): BackchannelRecord => ({
      clientId: 'app-1',
      subscriberId: 'sub-alice',
      phoneNumber: null,
      identifiedBy: 'tel',
      authorizedAt: now,
      purpose: 'FraudPreventionAndDetection',
      scopes: ['device-location'],
      consentScopes: ['device-location'],
      scope: LOCATION,
      status: 'pending',
      createdAt: now,
      approvedAt: null,
      expiresAt: now + 120_000,
      grantId: `g-${authReqId}`,
    });
    const claim = (i: number, deniedAt?: number) =>
      claimConsentNotification(store, now, `req-${i}`, request(`req-${i}`), deniedAt);
    await store.put('backchannel', hashedRecordId('req-0'), request('req-0'), { ttl: 120 });
    const first = await Promise.all(Array.from({ length: 50 }, (_, i) => claim(i)));
    expect(first.filter(Boolean)).toHaveLength(1);
    // The sender's request is gone with no token (refused by the approval hook, say): the next one notifies.
    const sender = first.indexOf(true);
    await store.delete('backchannel', hashedRecordId(`req-${sender}`));
    const second = await Promise.all(Array.from({ length: 50 }, (_, i) => claim(100 + i)));
    expect(second.filter(Boolean)).toHaveLength(1);
  });
});
