import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { APP2, CIBA, createTestGateway, LOCATION, SIM_SWAP } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { CALLBACK, callApi, codeFor, redeem } from '../../helpers/frontend.js';
import { recordEvents } from '../../helpers/events.js';
import { OFFLINE_AUTH, callService, createGrantsGateway, refresh } from '../../helpers/grants.js';
import {
  MemoryStore,
  StoreUnavailableError,
  type JsonObject,
  type PutOptions,
  type RecordKind,
  type RecordWrite,
  type StoredRecord,
} from '../../../lib/index.js';

/**
 * Consuming an approved auth_req_id (or a code) and storing the token issued for it are one atomic step (the
 * store's `consume` with the token's record attached): a store failure there answers 503 and uses nothing up,
 * so the same request gets its token on the next try. Before, the request was consumed first and a failure
 * writing the token burnt it (`invalid_grant` ever after).
 */

const ALICE = 'tel:+34600000001';

/**
 * A real memory store whose next write of an access-token record (by whichever operation makes it), or next
 * read of the revocation list (or of a not-before marker), fails as an unreachable Redis would: the operation does nothing and rejects. Or
 * whose next consume-and-issue runs and then rejects, as a Redis whose reply came after the store's deadline.
 */
class FlakyStore extends MemoryStore {
  failNext: 'token write' | 'revocation read' | 'marker read' | 'late reply' | undefined;

  private fail(what: NonNullable<FlakyStore['failNext']>, when: boolean): void {
    if (!when || this.failNext !== what) return;
    this.failNext = undefined;
    throw new StoreUnavailableError('Redis is unavailable');
  }

  override async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    this.fail('token write', kind === 'access_token');
    return super.put(kind, id, value, options);
  }

  override async consume(kind: RecordKind, id: string, writes: readonly RecordWrite[] = []): Promise<boolean> {
    const issuing = writes.some((w) => w.kind === 'access_token');
    this.fail('token write', issuing);
    const consumed = await super.consume(kind, id, writes);
    this.fail('late reply', issuing);
    return consumed;
  }

  override async get<T extends JsonObject = JsonObject>(
    kind: RecordKind,
    id: string,
  ): Promise<StoredRecord<T> | undefined> {
    this.fail('revocation read', kind === 'revoked');
    this.fail('marker read', kind === 'not_before');
    return super.get<T>(kind, id);
  }
}

function gateway() {
  const store = new FlakyStore();
  return { ...createTestGateway({ store }), store };
}

describe('consuming a request and storing its token are one step', () => {
  it('CIBA: a failure storing the token is a 503 that leaves the approved request to poll again', async () => {
    const { app, store, clock } = gateway();
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    store.failNext = 'token write';
    const failed = await pollToken(app, id);
    expect(failed.status).toBe(503);
    expect(failed.body.error).toBe('temporarily_unavailable');
    const retried = await pollToken(app, id);
    expect(retried.status).toBe(200);
    expect((await callApi(app, retried.body.access_token as string)).status).toBe(200);
    // Past lifetimes.redemptionRetry: used up.
    clock.advance(31);
    expect((await pollToken(app, id)).body.error).toBe('invalid_grant');
  });

  it('CIBA under consent: a revocation list that cannot be read is a 503 that uses nothing up', async () => {
    const { app, netauth, store } = gateway();
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    const id = await startBackchannel(app, ALICE, LOCATION);
    store.failNext = 'revocation read';
    expect((await pollToken(app, id)).status).toBe(503);
    const retried = await pollToken(app, id);
    expect(retried.status).toBe(200);
    expect(
      (
        await request(app)
          .get('/location')
          .set('Authorization', `Bearer ${retried.body.access_token as string}`)
      ).status,
    ).toBe(200);
  });

  it('CIBA: a reply lost after the step ran (503): the retry gets that token; another client, nothing', async () => {
    const { app, store, clock } = gateway();
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    store.failNext = 'late reply';
    expect((await pollToken(app, id)).status).toBe(503);
    clock.advance(29);
    const retried = await pollToken(app, id);
    expect(retried.status).toBe(200);
    expect((await callApi(app, retried.body.access_token as string)).status).toBe(200);
    expect((await pollToken(app, id, APP2)).body.error).toBe('invalid_grant');
    const again = await Promise.all(Array.from({ length: 50 }, () => pollToken(app, id)));
    expect(new Set(again.map((r) => r.body.access_token))).toEqual(new Set([retried.body.access_token]));
  });

  it('CIBA: a not-before marker unread beside the step (503): the retry reads the markers and gets the tokens the step wrote', async () => {
    const { app, netauth, store } = gateway();
    const events = recordEvents(netauth);
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    store.failNext = 'marker read';
    expect((await pollToken(app, id)).status).toBe(503);
    expect(events.of('redemption.unsettled')).toEqual([{ clientId: 'app-1', grantType: CIBA }]);
    const retried = await pollToken(app, id);
    expect(retried.status).toBe(200);
    expect(events.of('redemption.redelivered')).toEqual([{ clientId: 'app-1', grantType: CIBA }]);
    expect((await callApi(app, retried.body.access_token as string)).status).toBe(200);
  });

  it('code: a reply lost after the step ran (503): the retry gets that token, not a replay', async () => {
    const gw = gateway();
    const code = await codeFor(gw);
    gw.store.failNext = 'late reply';
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(503);
    const retried = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    expect(retried.status).toBe(200);
    expect((await callApi(gw.app, retried.body.access_token as string)).status).toBe(200);
  });

  it('refresh: a reply lost after the step ran (503): the retry gets those tokens, not a reuse that revokes the grant', async () => {
    const store = new FlakyStore();
    const gw = createGrantsGateway({ store, rateLimits: false });
    const code = await codeFor(gw, {
      client_id: 'offline-app',
      scope: 'dpv:FraudPreventionAndDetection#sim-swap offline_access',
    });
    const first = (await redeem(gw.app, { code, redirect_uri: CALLBACK }, OFFLINE_AUTH)).body as Record<string, string>;
    store.failNext = 'late reply';
    expect((await refresh(gw.app, first.refresh_token!)).status).toBe(503);
    const retried = await refresh(gw.app, first.refresh_token!);
    expect(retried.status).toBe(200);
    expect((await callService(gw.app, retried.body.access_token as string)).status).toBe(200);
    expect((await refresh(gw.app, retried.body.refresh_token as string)).status).toBe(200);
  });

  it('code: a failure storing the token is a 503 that leaves the code redeemable, once', async () => {
    const gw = gateway();
    const code = await codeFor(gw);
    gw.store.failNext = 'token write';
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(503);
    const retried = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    expect(retried.status).toBe(200);
    expect((await callApi(gw.app, retried.body.access_token as string)).status).toBe(200);
    // Used now: a replay (after lifetimes.redemptionRetry) is invalid_grant and revokes the token issued from it.
    gw.clock.advance(31);
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).body.error).toBe('invalid_grant');
    expect((await callApi(gw.app, retried.body.access_token as string)).status).toBe(401);
  });
});
