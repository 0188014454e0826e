/**
 * The operator's levers (issue 43) through HTTP: what a subscriber holds with one client (every kind of token and
 * request), and whether each of them is refused or still works on a gateway, the same on memory and on Redis.
 */
import request from 'supertest';
import type { Express } from 'express';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NetAuth, NetAuthOptions, Store } from '../../lib/index.js';
import { wrapStore } from './store-wrapper.js';
import { recordEvents } from './events.js';
import type { TestGateway } from './gateway.js';
import { CALLBACK, LOCATION, SIM_SWAP, authorize, callback, cookies, localPath, location, redeem } from './frontend.js';
import { bcAuthorize, pollToken } from './requests.js';
import { OFFLINE_AUTH, POPULATION, SERVICE_AUTH, createGrantsGateway, refresh, tokenRequest } from './grants.js';
import { APP1 } from './gateway.js';
import { KEY_A } from './keys.js';

export const ALICE = { hint: 'tel:+34600000001', ip: '10.20.0.1', id: 'sub-alice' };
export const BOB = { hint: 'tel:+34600000002', ip: '10.20.0.2', id: 'sub-bob' };
export type Line = typeof ALICE;

/** One clock for every gateway of a test (a fleet shares the time), in ms. */
export interface SharedClock {
  now: number;
}

export function sharedClock(): SharedClock {
  return { now: 1_800_000_000_000 };
}

/**
 * The grants fixture on `clock`, with one signing key and cookie secret (every instance of a fleet verifies every
 * instance's JWTs and reads its consent-page sessions), and beside the default guard (`revocation: 'local'`) a route whose guard reads the store on every call.
 */
export function leversGateway(clock: SharedClock, overrides: Partial<NetAuthOptions> = {}): TestGateway {
  const gw = createGrantsGateway({
    signingKeys: [KEY_A],
    consentPage: { cookieSecret: 'the-fleet-cookie-secret-of-32-chars+' },
    now: () => clock.now,
    ...overrides,
  });
  gw.app.post('/sim-swap/store', gw.netauth.guard({ scope: 'sim-swap', revocation: 'store' }), (req, res) => {
    res.json({ subscriber: req.netauth?.subscriber.id });
  });
  return gw;
}

/** Everything a subscriber holds with the offline client: every kind of token and request the levers must stop. */
export interface Holdings {
  accessToken: string;
  refreshToken: string;
  /** Approved at once (sim-swap, no consent needed), not polled yet. */
  approvedAuthReqId: string;
  /** Waiting for the subscriber's consent (device-location). */
  pendingAuthReqId: string;
  /** Issued, not redeemed. */
  code: string;
  /** The consent page of a request waiting for the subscriber's answer: its path and the browser's cookie. */
  consentPage: { path: string; cookie: string };
}

async function started(app: Express, line: Line, scope: string, auth = OFFLINE_AUTH): Promise<string> {
  const res = await bcAuthorize(app, { login_hint: line.hint, scope }, auth);
  expect(res.status).toBe(200);
  return res.body.auth_req_id as string;
}

/** A CIBA flow of the offline client to its tokens (access and refresh), on `app`. */
export async function cibaTokens(app: Express, line: Line): Promise<{ access_token: string; refresh_token: string }> {
  const polled = await pollToken(app, await started(app, line, `${SIM_SWAP} offline_access`), OFFLINE_AUTH);
  expect(polled.status).toBe(200);
  return polled.body as { access_token: string; refresh_token: string };
}

export async function holdingsOf(app: Express, line: Line): Promise<Holdings> {
  const tokens = await cibaTokens(app, line);
  const code = callback(await authorize(app, { client_id: 'offline-app', scope: SIM_SWAP }, { ip: line.ip })).code;
  const asked = await authorize(app, { client_id: 'offline-app', scope: LOCATION }, { ip: line.ip });
  expect(asked.status).toBe(302);
  return {
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    approvedAuthReqId: await started(app, line, SIM_SWAP),
    pendingAuthReqId: await started(app, line, LOCATION),
    code: code!,
    consentPage: { path: localPath(location(asked)), cookie: cookies(asked) },
  };
}

function call(app: Express, token: string, path = '/sim-swap/check') {
  return request(app).post(path).set('Authorization', `Bearer ${token}`);
}

function introspect(app: Express, token: string) {
  return request(app).post('/apigateway/introspect').set('Authorization', OFFLINE_AUTH).type('form').send({ token });
}

/** The guard, with the store read on every call: refuses at once on every instance. */
export async function expectGuardRefusesAtOnce(app: Express, h: Holdings): Promise<void> {
  expect((await call(app, h.accessToken, '/sim-swap/store')).status).toBe(401);
}

/** Every kind refused, each the way its endpoint refuses. */
export async function expectRefused(app: Express, h: Holdings): Promise<void> {
  const api = await call(app, h.accessToken);
  expect(api.status).toBe(401);
  expect(api.headers['www-authenticate']).toContain('invalid_token');
  expect((await call(app, h.accessToken, '/sim-swap/store')).status).toBe(401);
  expect((await introspect(app, h.accessToken)).body).toEqual({ active: false });
  expect((await introspect(app, h.refreshToken)).body).toEqual({ active: false });
  const refreshed = await refresh(app, h.refreshToken);
  expect([refreshed.status, refreshed.body.error]).toEqual([400, 'invalid_grant']);
  for (const id of [h.approvedAuthReqId, h.pendingAuthReqId]) {
    const polled = await pollToken(app, id, OFFLINE_AUTH);
    expect([polled.status, polled.body.error]).toEqual([400, 'invalid_grant']);
  }
  const redeemed = await redeem(app, { code: h.code, redirect_uri: CALLBACK }, OFFLINE_AUTH);
  expect([redeemed.status, redeemed.body.error]).toEqual([400, 'invalid_grant']);
  const page = await request(app).get(h.consentPage.path).set('Cookie', h.consentPage.cookie);
  expect(page.status).toBe(302);
  expect(callback(page)).toMatchObject({
    error: 'access_denied',
    error_description: 'the consent request was revoked by the operator',
  });
}

/** Every kind still works (each is used up here: call once). */
export async function expectWorking(app: Express, h: Holdings, line: Line): Promise<void> {
  const api = await call(app, h.accessToken);
  expect([api.status, api.body.subscriber]).toEqual([200, line.id]);
  expect((await call(app, h.accessToken, '/sim-swap/store')).status).toBe(200);
  expect((await introspect(app, h.refreshToken)).body.active).toBe(true);
  expect((await refresh(app, h.refreshToken)).status).toBe(200);
  expect((await pollToken(app, h.approvedAuthReqId, OFFLINE_AUTH)).status).toBe(200);
  expect((await pollToken(app, h.pendingAuthReqId, OFFLINE_AUTH)).body.error).toBe('authorization_pending');
  expect((await redeem(app, { code: h.code, redirect_uri: CALLBACK }, OFFLINE_AUTH)).status).toBe(200);
  const page = await request(app).get(h.consentPage.path).set('Cookie', h.consentPage.cookie);
  expect(page.status).toBe(200);
}

/** Two instances of one fleet (on memory: one gateway twice), on one clock, their stores behind one gate. */
export interface Fleet {
  a: TestGateway;
  b: TestGateway;
  clock: SharedClock;
  gate: IssueGate;
  close(): Promise<void>;
}

/**
 * Holds the CIBA grant's issuing step (the store's consume of the auth_req_id, which writes the tokens) while asked
 * to: a test lets every request pass its checks, does something, then lets them issue.
 */
export class IssueGate {
  private holding = false;
  private waiting: Array<() => void> = [];
  private count = 0;
  private watchers: Array<{ n: number; resolve: () => void }> = [];

  wrap(store: Store): Store {
    return wrapStore(store, {
      consume: async (kind, id, writes) => {
        if (this.holding && kind === 'backchannel') {
          this.count += 1;
          for (const w of this.watchers.filter((w) => w.n <= this.count)) w.resolve();
          await new Promise<void>((resolve) => this.waiting.push(resolve));
        }
        return store.consume(kind, id, writes);
      },
    });
  }

  hold(): void {
    this.holding = true;
  }

  /** Resolves once `n` issues wait at the gate. */
  arrived(n: number): Promise<void> {
    if (this.count >= n) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ n, resolve }));
  }

  release(): void {
    this.holding = false;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

/** Seconds within which a guard with `revocation: 'local'` on another instance refuses (docs/operations.md). */
const WITHIN = 5;

function advance(clock: SharedClock, seconds: number): void {
  clock.now += seconds * 1000;
}

async function clientCredentials(app: Express): Promise<string> {
  const res = await tokenRequest(app, { grant_type: 'client_credentials', scope: POPULATION }, SERVICE_AUTH);
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

async function consentsOf(netauth: NetAuth, line: Line): Promise<string[]> {
  return (await netauth.consent.list({ subscriberId: line.id })).map((r) => `${r.clientId} ${r.scope} ${r.status}`);
}

/**
 * Issue 43's "done when", on any fleet: every kind of token and request of the revoked subscriber (or client)
 * refused on the other instance, another subscriber's (or client's) untouched, consents as asked, and a race of
 * 50 token requests with the revocation leaving nothing that began before it working.
 */
export function describeLevers(name: string, create: (format: 'opaque' | 'jwt') => Promise<Fleet>): void {
  describe.each(['opaque', 'jwt'] as const)(`the operator's levers on ${name}, %s access tokens`, (format) => {
    let fleet: Fleet;
    beforeEach(async () => {
      fleet = await create(format);
    });
    afterEach(async () => {
      await fleet.close();
    });

    it("subscribers.revoke: every token and request of the subscriber is refused on every instance, another subscriber's work, consents withdrawn by reason", async () => {
      const { a, b, clock } = fleet;
      const events = recordEvents(a.netauth);
      await a.netauth.consent.grant({ clientId: 'app-1', subscriberId: ALICE.id, scope: LOCATION });
      await a.netauth.consent.grant({ clientId: 'app-1', subscriberId: BOB.id, scope: LOCATION });
      const alice = await holdingsOf(a.app, ALICE);
      const bob = await holdingsOf(a.app, BOB);
      // The other instance has used Alice's token: what it read about her is in its memory.
      expect((await call(b.app, alice.accessToken)).status).toBe(200);
      clock.now += 1;

      const result = await a.netauth.subscribers.revoke(ALICE.id, { reason: 'number_recycled' });
      expect(result).toEqual({ notBefore: clock.now, consents: 'withdraw', consentsWithdrawn: 1 });
      await expectGuardRefusesAtOnce(b.app, alice);
      advance(clock, WITHIN);
      await expectRefused(b.app, alice);
      await expectWorking(b.app, bob, BOB);
      expect(await consentsOf(b.netauth, ALICE)).toEqual([]);
      expect(await consentsOf(b.netauth, BOB)).toEqual([`app-1 device-location granted`]);
      // The export shows who withdrew, how and why.
      expect((await b.netauth.consent.export(ALICE.id)).records).toEqual([
        expect.objectContaining({
          status: 'withdrawn',
          withdrawal: expect.objectContaining({ by: 'operator', via: 'api', reason: 'number_recycled' }),
        }),
      ]);
      expect(events.of('subscriber.revoked')).toEqual([
        { subscriberId: ALICE.id, reason: 'number_recycled', consents: 'withdraw', consentsWithdrawn: 1 },
      ]);

      // The line's next holder starts clean: what begins after the revocation works.
      await expectWorking(b.app, await holdingsOf(b.app, ALICE), ALICE);
    });

    it('subscribers.revoke for a SIM swap keeps the consents; consents: withdraw overrides the default', async () => {
      const { a, b, clock } = fleet;
      await a.netauth.consent.grant({ clientId: 'app-1', subscriberId: ALICE.id, scope: LOCATION });
      await a.netauth.consent.grant({ clientId: 'app-1', subscriberId: BOB.id, scope: LOCATION });
      const alice = await holdingsOf(a.app, ALICE);
      clock.now += 1;
      expect(await a.netauth.subscribers.revoke(ALICE.id, { reason: 'sim_swap' })).toMatchObject({ consents: 'keep' });
      advance(clock, WITHIN);
      await expectRefused(b.app, alice);
      expect(await consentsOf(b.netauth, ALICE)).toEqual([`app-1 device-location granted`]);
      expect(await a.netauth.subscribers.revoke(BOB.id, { reason: 'fraud', consents: 'withdraw' })).toMatchObject({
        consents: 'withdraw',
        consentsWithdrawn: 1,
      });
      expect(await consentsOf(b.netauth, BOB)).toEqual([]);
    });

    it("clients.revoke: every token and request of the client is refused for every subscriber, another client's work, and the client starts clean", async () => {
      const { a, b, clock } = fleet;
      const events = recordEvents(a.netauth);
      const alice = await holdingsOf(a.app, ALICE);
      const bob = await holdingsOf(a.app, BOB);
      const otherClient = await pollToken(a.app, await started(a.app, BOB, SIM_SWAP, APP1), APP1);
      const twoLegged = await clientCredentials(a.app);
      expect((await request(b.app).get('/population').set('Authorization', `Bearer ${twoLegged}`)).status).toBe(200);
      clock.now += 1;

      expect(await a.netauth.clients.revoke('offline-app', { reason: 'compromised' })).toEqual({
        notBefore: clock.now,
      });
      await a.netauth.clients.revoke('service-app', { reason: 'offboarded' });
      await expectGuardRefusesAtOnce(b.app, alice);
      advance(clock, WITHIN);
      await expectRefused(b.app, alice);
      await expectRefused(b.app, bob);
      expect((await call(b.app, otherClient.body.access_token)).status).toBe(200);
      expect((await request(b.app).get('/population').set('Authorization', `Bearer ${twoLegged}`)).status).toBe(401);
      expect(events.of('client.revoked')).toEqual([
        { clientId: 'offline-app', reason: 'compromised' },
        { clientId: 'service-app', reason: 'offboarded' },
      ]);

      // The registration the registry returns again starts clean.
      await expectWorking(b.app, await holdingsOf(b.app, ALICE), ALICE);
      const fresh = await clientCredentials(b.app);
      expect((await request(a.app).get('/population').set('Authorization', `Bearer ${fresh}`)).status).toBe(200);
    });

    it('50 token requests racing subscribers.revoke: nothing that began before it works after it', async () => {
      const { a, b, clock, gate } = fleet;
      const ids = await Promise.all(
        Array.from({ length: 50 }, () => started(a.app, ALICE, `${SIM_SWAP} offline_access`)),
      );
      clock.now += 1;
      // Every poll has read the markers (none yet) and waits at the step that issues its tokens: the revocation
      // lands between the check and the issue, the race at its worst.
      gate.hold();
      const polls = ids.map((id, i) => pollToken(i % 2 === 0 ? a.app : b.app, id, OFFLINE_AUTH).then((r) => r));
      await gate.arrived(50);
      await a.netauth.subscribers.revoke(ALICE.id, { reason: 'fraud' });
      gate.release();
      const answers = await Promise.all(polls);
      expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
      advance(clock, WITHIN);
      for (const { body } of answers) {
        expect((await call(a.app, body.access_token)).status).toBe(401);
        expect((await call(b.app, body.access_token)).status).toBe(401);
        expect((await refresh(b.app, body.refresh_token)).body.error).toBe('invalid_grant');
      }
      // What begins after it works.
      expect((await call(b.app, (await cibaTokens(a.app, ALICE)).access_token)).status).toBe(200);
    });
  });
}
