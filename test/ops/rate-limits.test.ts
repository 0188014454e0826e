import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import {
  APP1,
  APP2,
  CIBA,
  ISSUER,
  LOCATION,
  SIM_SWAP,
  basic,
  createTestGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { handProof, proofKey, type ProofKey } from '../helpers/dpop.js';
import { bcAuthorize, pollToken, startBackchannel } from '../helpers/requests.js';
import { CALLBACK, authorize, callback, codeFor, redeem } from '../helpers/frontend.js';
import { recordEvents } from '../helpers/events.js';
import { describeEachBackend, expectTooMany, only, windowPassed } from '../helpers/rate-limits.js';
import { RATE_LIMIT_DEFAULTS, MemoryStore, RedisStore, createNetAuth, type RateLimitOptions } from '../../lib/index.js';
import { CLIENTS, POLICY, SUBSCRIBERS } from '../helpers/gateway.js';

const ALICE = 'tel:+34600000001';
const BOB = 'tel:+34600000002';

const from = (
  app: Express,
  ip: string,
  authorization: string,
  body: Record<string, string> = { login_hint: ALICE, scope: SIM_SWAP },
) =>
  request(app)
    .post('/apigateway/bc-authorize')
    .set('X-Forwarded-For', ip)
    .set('Authorization', authorization)
    .type('form')
    .send(body);

describeEachBackend('rate limits', (backend) => {
  describe('bc-authorize', () => {
    it('per client: past the limit 429 temporarily_unavailable with Retry-After; other clients unaffected', async () => {
      const { app, netauth } = backend.gateway({
        rateLimits: only({ bcAuthorize: { perClient: { points: 2, duration: 60 } } }),
      });
      const events = recordEvents(netauth);
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expect((await bcAuthorize(app, { login_hint: BOB, scope: SIM_SWAP })).status).toBe(200);
      // Counted before anything else: an invalid request over the limit is 429 too.
      expectTooMany(await bcAuthorize(app, { login_hint: BOB, scope: 'dpv:Nothing#x' }), 60);
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'bc-authorize', limit: 'client', clientId: 'app-1', retryAfter: expect.any(Number) },
      ]);
      expect(events.of('ciba.requested')).toHaveLength(3);
    });

    it("by default one client cannot use up another client's allowance for the same subscriber", async () => {
      const { app, netauth } = backend.gateway();
      const events = recordEvents(netauth);
      const allowance = RATE_LIMIT_DEFAULTS.bcAuthorize.perClientAndSubscriber.points;
      for (let i = 0; i < allowance; i++)
        expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expectTooMany(await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }), 600);
      // The other client's requests for Alice, and app-1's for Bob, are served.
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
      expect((await bcAuthorize(app, { login_hint: BOB, scope: SIM_SWAP })).status).toBe(200);
      expect(events.of('rate.limited')).toEqual([
        {
          endpoint: 'bc-authorize',
          limit: 'client_subscriber',
          clientId: 'app-1',
          subscriberId: 'sub-alice',
          retryAfter: expect.any(Number),
        },
      ]);
    });

    it('per client and subscriber: 429; other clients for the subscriber, and the client for others, unaffected', async () => {
      const { app } = backend.gateway({
        rateLimits: only({ bcAuthorize: { perClientAndSubscriber: { points: 2, duration: 600 } } }),
      });
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expect((await bcAuthorize(app, { login_hint: 'ipport:10.20.0.1', scope: SIM_SWAP })).status).toBe(200);
      expectTooMany(await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }), 600);
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
      expect((await bcAuthorize(app, { login_hint: BOB, scope: SIM_SWAP })).status).toBe(200);
    });

    it("the subscriber-wide ceiling counts only requests within a client's allowance", async () => {
      const { app, netauth } = backend.gateway({
        rateLimits: only({
          bcAuthorize: {
            perClientAndSubscriber: { points: 2, duration: 600 },
            perSubscriber: { points: 3, duration: 600 },
          },
        }),
      });
      const events = recordEvents(netauth);
      // app-1 asks five times: two served, three refused by its own allowance, none of them counted in the ceiling.
      for (let i = 0; i < 5; i++) await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP });
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
      expectTooMany(await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, APP2), 600);
      expect(events.of('rate.limited').map((e) => e.limit)).toEqual([
        'client_subscriber',
        'client_subscriber',
        'client_subscriber',
        'subscriber',
      ]);
    });

    it('per subscriber (the ceiling), whichever client asks: 429; other subscribers unaffected', async () => {
      const { app, netauth } = backend.gateway({
        rateLimits: only({ bcAuthorize: { perSubscriber: { points: 2, duration: 600 } } }),
      });
      const events = recordEvents(netauth);
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
      expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(200);
      expectTooMany(await bcAuthorize(app, { login_hint: 'ipport:10.20.0.1', scope: SIM_SWAP }, APP2), 600);
      expect((await bcAuthorize(app, { login_hint: BOB, scope: SIM_SWAP })).status).toBe(200);
      expect(events.of('rate.limited')).toEqual([
        {
          endpoint: 'bc-authorize',
          limit: 'subscriber',
          clientId: 'app-2',
          subscriberId: 'sub-alice',
          retryAfter: expect.any(Number),
        },
      ]);
    });
  });

  describe('token', () => {
    it('per client, code grant: 429 with Retry-After; the code is not burnt', async () => {
      const gw = backend.gateway({ rateLimits: only({ token: { perClient: { points: 1, duration: 1 } } }) });
      const first = await codeFor(gw);
      const second = await codeFor(gw);
      expect((await redeem(gw.app, { code: first, redirect_uri: CALLBACK })).status).toBe(200);
      expectTooMany(await redeem(gw.app, { code: second, redirect_uri: CALLBACK }), 1);
      await windowPassed(backend, gw, 1);
      expect((await redeem(gw.app, { code: second, redirect_uri: CALLBACK })).status).toBe(200);
    });

    it('per client, CIBA grant: slow_down (400) with Retry-After, as CIBA has a poller slow down', async () => {
      const { app, netauth } = backend.gateway({
        rateLimits: only({ token: { perClient: { points: 1, duration: 60 } } }),
      });
      const events = recordEvents(netauth);
      const id = await startBackchannel(app, ALICE, LOCATION);
      expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
      const res = await pollToken(app, id);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('slow_down');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(events.of('ciba.slow_down')).toEqual([{ clientId: 'app-1', reason: 'rate_limit' }]);
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'token', limit: 'client', clientId: 'app-1', retryAfter: expect.any(Number) },
      ]);
    });

    it('CIBA polls are not counted per subscriber: the request was, at bc-authorize', async () => {
      const tight = { points: 1, duration: 60 };
      const { app, netauth, clock } = backend.gateway({
        rateLimits: only({ token: { perSubscriber: tight, perClientAndSubscriber: tight } }),
      });
      const events = recordEvents(netauth);
      const id = await startBackchannel(app, ALICE, LOCATION);
      const other = await startBackchannel(app, ALICE, SIM_SWAP, APP2);
      // Far more polls for Alice than either token limit allows: each request is paced by its interval only.
      for (let i = 0; i < 3; i++) {
        expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
        clock.advance(2);
      }
      expect((await pollToken(app, other, APP2)).status).toBe(200);
      await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
      expect((await pollToken(app, id)).status).toBe(200);
      expect(events.of('rate.limited')).toEqual([]);
      expect(events.of('ciba.slow_down')).toEqual([]);
    });

    it('per subscriber, code grant: 429', async () => {
      const gw = backend.gateway({ rateLimits: only({ token: { perSubscriber: { points: 1, duration: 60 } } }) });
      const first = await codeFor(gw);
      const second = await codeFor(gw);
      expect((await redeem(gw.app, { code: first, redirect_uri: CALLBACK })).status).toBe(200);
      expectTooMany(await redeem(gw.app, { code: second, redirect_uri: CALLBACK }), 60);
    });
  });

  describe('DPoP proofs per key', () => {
    const API = 'http://gateway.test';
    const dpopLimit = (points: number) => only({ dpopProofs: { perKey: { points, duration: 60 } } });
    const proof = (gw: TestGateway, key: ProofKey, htm: string, htu: string, accessToken?: string) =>
      handProof({ key, htm, htu, iat: Math.floor(gw.clock.now / 1000), ...(accessToken ? { accessToken } : {}) });
    const redeemWithProof = async (gw: TestGateway, key: ProofKey, code: string) =>
      request(gw.app)
        .post('/apigateway/token')
        .set('Authorization', APP1)
        .set('DPoP', await proof(gw, key, 'POST', `${ISSUER}/token`))
        .type('form')
        .send({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK });
    const callWithProof = async (gw: TestGateway, key: ProofKey, token: string, path = '/sim-swap/check') =>
      request(gw.app)
        .post(path)
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await proof(gw, key, 'POST', `${API}${path}`, token));

    it('past the cap: 429 with Retry-After at the guard and the token endpoint, reported as rate.limited; the code is not burnt', async () => {
      const gw = backend.gateway({ rateLimits: dpopLimit(2) });
      const events = recordEvents(gw.netauth);
      const key = await proofKey();
      const bound = await redeemWithProof(gw, key, await codeFor(gw));
      expect(bound.body.token_type).toBe('DPoP');
      const token = bound.body.access_token as string;
      expect((await callWithProof(gw, key, token)).status).toBe(200);

      const limited = await callWithProof(gw, key, token);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
      // A rate limit is no authentication failure: no challenge to present other credentials.
      expect(limited.headers['www-authenticate']).toBeUndefined();
      const code = await codeFor(gw);
      expectTooMany(await redeemWithProof(gw, key, code), 60);
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'guard', limit: 'dpop_key', clientId: 'app-1', retryAfter: expect.any(Number) },
        { endpoint: 'token', limit: 'dpop_key', clientId: 'app-1', retryAfter: expect.any(Number) },
      ]);
      // Refused before the grant read the code: with another key it still redeems.
      expect((await redeemWithProof(gw, await proofKey(), code)).status).toBe(200);
    });

    it("the guard's CAMARA format: 429 TOO_MANY_REQUESTS with Retry-After", async () => {
      const gw = backend.gateway({ rateLimits: dpopLimit(2) });
      gw.app.post('/camara/check', gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'camara' }), (_req, res) => {
        res.json({ ok: true });
      });
      const key = await proofKey();
      const token = (await redeemWithProof(gw, key, await codeFor(gw))).body.access_token as string;
      expect((await callWithProof(gw, key, token, '/camara/check')).status).toBe(200);
      const res = await callWithProof(gw, key, token, '/camara/check');
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ status: 429, code: 'TOO_MANY_REQUESTS', message: 'Rate limit reached.' });
      const wait = Number(res.headers['retry-after']);
      expect(wait >= 1 && wait <= 60).toBe(true);
      expect(res.headers['www-authenticate']).toBeUndefined();
    });

    it('a CIBA poll past the cap: slow_down (400) with Retry-After, as for the client limit', async () => {
      const gw = backend.gateway({ rateLimits: dpopLimit(1) });
      const events = recordEvents(gw.netauth);
      const key = await proofKey();
      const id = await startBackchannel(gw.app, ALICE, LOCATION);
      const poll = async () =>
        request(gw.app)
          .post('/apigateway/token')
          .set('Authorization', APP1)
          .set('DPoP', await proof(gw, key, 'POST', `${ISSUER}/token`))
          .type('form')
          .send({ grant_type: CIBA, auth_req_id: id });
      expect((await poll()).body.error).toBe('authorization_pending');
      // Past the poll interval: only the key's cap can slow this poll down.
      gw.clock.advance(10);
      const res = await poll();
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('slow_down');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(events.of('ciba.slow_down')).toEqual([{ clientId: 'app-1', reason: 'rate_limit' }]);
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'token', limit: 'dpop_key', clientId: 'app-1', retryAfter: expect.any(Number) },
      ]);
    });
  });

  describe('DPoP proofs per client (issue 42, finding 6)', () => {
    const API = 'http://gateway.test';
    // Per key off: only the client's bound counts here.
    const clientLimit = (points: number) =>
      only({ dpopProofs: { perKey: false, perClient: { points, duration: 60 } } });
    const proof = (gw: TestGateway, key: ProofKey, htm: string, htu: string, accessToken?: string) =>
      handProof({ key, htm, htu, iat: Math.floor(gw.clock.now / 1000), ...(accessToken ? { accessToken } : {}) });
    const redeemWithProof = async (gw: TestGateway, key: ProofKey, code: string) =>
      request(gw.app)
        .post('/apigateway/token')
        .set('Authorization', APP1)
        .set('DPoP', await proof(gw, key, 'POST', `${ISSUER}/token`))
        .type('form')
        .send({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK });
    const callWithProof = async (gw: TestGateway, key: ProofKey, token: string) =>
      request(gw.app)
        .post('/sim-swap/check')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await proof(gw, key, 'POST', `${API}/sim-swap/check`, token));
    const cibaPoll = async (gw: TestGateway, key: ProofKey, id: string, authorization = APP1) =>
      request(gw.app)
        .post('/apigateway/token')
        .set('Authorization', authorization)
        .set('DPoP', await proof(gw, key, 'POST', `${ISSUER}/token`))
        .type('form')
        .send({ grant_type: CIBA, auth_req_id: id });

    it("a fresh key per token brings no fresh allowance: the client's keys together stop at its cap, 429 at the guard and the token endpoint; other clients served", async () => {
      const gw = backend.gateway({ rateLimits: clientLimit(3) });
      const events = recordEvents(gw.netauth);
      const [one, two, three] = [await proofKey(), await proofKey(), await proofKey()];
      const first = (await redeemWithProof(gw, one, await codeFor(gw))).body.access_token as string;
      expect((await callWithProof(gw, one, first)).status).toBe(200);
      const second = await redeemWithProof(gw, two, await codeFor(gw));
      expect(second.body.token_type).toBe('DPoP');
      // The fourth proof, of a key that has made one: the client's allowance is spent.
      const limited = await callWithProof(gw, two, second.body.access_token as string);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
      expect(limited.headers['www-authenticate']).toBeUndefined();
      const wait = Number(limited.headers['retry-after']);
      expect(wait >= 1 && wait <= 60).toBe(true);
      const code = await codeFor(gw);
      expectTooMany(await redeemWithProof(gw, three, code), 60);
      // Another client's keys count for it alone.
      const id = await startBackchannel(gw.app, ALICE, SIM_SWAP, APP2);
      expect((await cibaPoll(gw, await proofKey(), id, APP2)).body.token_type).toBe('DPoP');
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'guard', limit: 'dpop_client', clientId: 'app-1', retryAfter: expect.any(Number) },
        { endpoint: 'token', limit: 'dpop_client', clientId: 'app-1', retryAfter: expect.any(Number) },
      ]);
      // Refused before the grant read the code: without a proof (unbound) it still redeems.
      expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(200);
    });

    it('a CIBA poll past the cap with a new key: slow_down (400) with Retry-After', async () => {
      const gw = backend.gateway({ rateLimits: clientLimit(1) });
      const events = recordEvents(gw.netauth);
      const id = await startBackchannel(gw.app, ALICE, LOCATION);
      expect((await cibaPoll(gw, await proofKey(), id)).body.error).toBe('authorization_pending');
      gw.clock.advance(10);
      const res = await cibaPoll(gw, await proofKey(), id);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('slow_down');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'token', limit: 'dpop_client', clientId: 'app-1', retryAfter: expect.any(Number) },
      ]);
    });
  });

  describe('/authorize per address', () => {
    it('once the redirect target is validated: a redirect with temporarily_unavailable, the state and iss', async () => {
      const gw = backend.gateway({ rateLimits: only({ authorize: { perAddress: { points: 2, duration: 60 } } }) });
      const events = recordEvents(gw.netauth);
      expect(callback(await authorize(gw.app)).code).toBeDefined();
      expect(callback(await authorize(gw.app)).code).toBeDefined();
      const res = await authorize(gw.app, { state: 'xyz' });
      expect(res.status).toBe(302);
      expect(callback(res)).toEqual({
        error: 'temporarily_unavailable',
        error_description: expect.any(String),
        state: 'xyz',
        iss: ISSUER,
      });
      // Bob's device is another address.
      expect(callback(await authorize(gw.app, {}, { ip: '10.20.0.2' })).code).toBeDefined();
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'authorize', limit: 'address', clientId: 'app-1', retryAfter: expect.any(Number) },
      ]);
    });

    it('before the target is validated: a 429 error page with Retry-After, never a redirect', async () => {
      const gw = backend.gateway({ rateLimits: only({ authorize: { perAddress: { points: 1, duration: 60 } } }) });
      await authorize(gw.app);
      const res = await authorize(gw.app, { client_id: 'nobody' });
      expect(res.status).toBe(429);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.text).toContain('temporarily_unavailable');
    });

    it('an IPv6 address counts by its /64', async () => {
      const gw = backend.gateway({ rateLimits: only({ authorize: { perAddress: { points: 2, duration: 60 } } }) });
      expect(callback(await authorize(gw.app, {}, { ip: '2001:db8::1' })).code).toBeDefined();
      expect(callback(await authorize(gw.app, {}, { ip: '2001:db8::1' })).code).toBeDefined();
      expect(callback(await authorize(gw.app, {}, { ip: '2001:db8::abcd' })).error).toBe('temporarily_unavailable');
      expect(callback(await authorize(gw.app, {}, { ip: '2001:db8:0:1::1' })).error).toBe('access_denied');
    });

    it("behind CGNAT each port counts apart: one device past the limit does not block another port's subscriber (issue 42, finding 7)", async () => {
      const gw = backend.gateway({ rateLimits: only({ authorize: { perAddress: { points: 3, duration: 60 } } }) });
      const alice = { ip: '100.64.0.1', port: '1500' };
      for (let i = 0; i < 3; i++) expect(callback(await authorize(gw.app, {}, alice)).code).toBeDefined();
      expect(callback(await authorize(gw.app, {}, alice)).error).toBe('temporarily_unavailable');
      // Bob, behind the same address on another port, and Alice's phone on another of its ports.
      expect(callback(await authorize(gw.app, {}, { ip: '100.64.0.1', port: '3000' })).code).toBeDefined();
      expect(callback(await authorize(gw.app, {}, { ip: '100.64.0.1', port: '1501' })).code).toBeDefined();
      // The consents page counts with it, the same way.
      const consents = (port: string) =>
        request(gw.app).get('/apigateway/consents').set('X-Forwarded-For', '100.64.0.1').set('x-source-port', port);
      expect((await consents('1500')).status).toBe(429);
      expect((await consents('3001')).status).toBe(200);
      // Without the port, the address alone is the key: every device behind it shares it.
      for (let i = 0; i < 3; i++) await authorize(gw.app, {}, { ip: '100.64.0.1' });
      expect(callback(await authorize(gw.app, {}, { ip: '100.64.0.1' })).error).toBe('temporarily_unavailable');
      expect(callback(await authorize(gw.app, {}, { ip: '100.64.0.1', port: '3002' })).code).toBeDefined();
    });
  });
});

describe('rateLimits option', () => {
  it('false turns every limit off', async () => {
    const { app } = createTestGateway({ rateLimits: false });
    for (let i = 0; i < 40; i++) expect((await from(app, '192.0.2.5', basic('app-1', 'wrong'))).status).toBe(401);
    expect((await from(app, '192.0.2.5', APP1)).status).toBe(200);
  });

  it('refuses rules that are not whole positive numbers, and a Redis backend without Redis', () => {
    const base = { issuer: ISSUER, clients: CLIENTS, subscribers: SUBSCRIBERS, consentPolicy: POLICY };
    expect(() => createNetAuth({ ...base, rateLimits: { token: { perClient: { points: 0, duration: 60 } } } })).toThrow(
      TypeError,
    );
    expect(() =>
      createNetAuth({ ...base, rateLimits: { authorize: { perAddress: { points: 5, duration: 0.5 } } } }),
    ).toThrow(TypeError);
    expect(() =>
      createNetAuth({ ...base, rateLimits: { clientAuthentication: { perAddress: { failures: -1, duration: 60 } } } }),
    ).toThrow(TypeError);
    // The former per-client-id lock (any address) is gone: naming it is an error that says what replaced it.
    const former = {
      clientAuthentication: { perClient: { failures: 50, duration: 900 } },
    } as unknown as RateLimitOptions;
    expect(() => createNetAuth({ ...base, rateLimits: former })).toThrow(/perClientAndAddress/);
    expect(() => createNetAuth({ ...base, store: new MemoryStore(), rateLimits: { backend: 'redis' } })).toThrow(
      /redis/,
    );
  });

  it('rateLimits.redis must be a Redis client, and keyPrefix carries no hash tag', () => {
    const base = { issuer: ISSUER, clients: CLIENTS, subscribers: SUBSCRIBERS, consentPolicy: POLICY };
    const notAClient = { redis: { eval: () => null } } as unknown as RateLimitOptions;
    expect(() => createNetAuth({ ...base, rateLimits: notAClient })).toThrow(
      'rateLimits.redis must be a node-redis client: createClient(), createCluster() or createSentinel() (missing: sendCommand)',
    );
    const store = new RedisStore({ client: { isOpen: true, isReady: true, sendCommand: async () => null } });
    expect(() => createNetAuth({ ...base, store, rateLimits: { keyPrefix: 'rl:{x}:' } })).toThrow(
      /keyPrefix "rl:\{x\}:" contains a brace/,
    );
    // Any client the store accepts carries the counters (RedisStore talks to it through sendCommand only).
    expect(() => createNetAuth({ ...base, store })).not.toThrow();
  });

  it('the defaults', () => {
    expect(RATE_LIMIT_DEFAULTS).toEqual({
      authorize: { perAddress: { points: 300, duration: 60 } },
      bcAuthorize: {
        perClient: { points: 3000, duration: 60 },
        perClientAndSubscriber: { points: 60, duration: 600 },
        perSubscriber: { points: 600, duration: 600 },
      },
      token: {
        perClient: { points: 6000, duration: 60 },
        perClientAndSubscriber: { points: 300, duration: 60 },
        perSubscriber: { points: 3000, duration: 60 },
      },
      clientCredentials: { perClient: { points: 100, duration: 3600 } },
      dpopProofs: { perKey: { points: 60000, duration: 900 }, perClient: { points: 300000, duration: 900 } },
      clientAuthentication: {
        perClientAndAddress: { failures: 30, duration: 900 },
        perAddress: { failures: 30, duration: 900 },
      },
    });
  });
});

describe("the counters keep the gateway's clock (the `now` option)", () => {
  it('a window ends when the injected clock passes it, not before: no waiting in real time', async () => {
    const { app, clock } = createTestGateway({
      rateLimits: only({ bcAuthorize: { perClient: { points: 1, duration: 60 } } }),
    });
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    const refused = await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP });
    expectTooMany(refused, 60);
    expect(refused.headers['retry-after']).toBe('60');
    clock.advance(59);
    const late = await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP });
    expectTooMany(late, 1);
    clock.advance(1);
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
  });
});
