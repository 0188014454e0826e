import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { decodeJwt } from 'jose';
import { MemoryStore } from '../../lib/index.js';
import { KEY_A, NoTokenReadStore } from '../helpers/keys.js';
import { CALLBACK, codeFor, redeem } from '../helpers/frontend.js';
import { recordEvents } from '../helpers/events.js';
import {
  BEARER_CLIENT,
  JWT_BEARER,
  OFFLINE_AUTH,
  bearerAssertion,
  callService,
  createGrantsGateway,
  tokenRequest,
} from '../helpers/grants.js';
import type { TestGateway } from '../helpers/gateway.js';

/**
 * Per-scope token policy (the consent policy rule's `accessTokenLifetime` and `singleUseAccessToken`): Number
 * Verification's tokens live at most 300 s and open one API call. The guard spends a single-use token atomically
 * (the store's `consume`), for opaque and JWT access tokens alike; introspection reports it without spending it.
 */

const NV = 'dpv:FraudPreventionAndDetection number-verification';
const VERIFY = '/number-verification/verify';

async function nvToken(gw: TestGateway): Promise<Record<string, unknown>> {
  const assertion = await bearerAssertion('tel:+34600000001', NV, { now: Math.floor(gw.clock.now / 1000) });
  const res = await tokenRequest(gw.app, { grant_type: JWT_BEARER, assertion });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${res.text}`);
  return res.body as Record<string, unknown>;
}

const introspect = (gw: TestGateway, token: string) =>
  request(gw.app).post('/apigateway/introspect').set('Authorization', OFFLINE_AUTH).type('form').send({ token });

describe.each(['opaque', 'jwt'] as const)('single-use, short-lived tokens (%s)', (format) => {
  const gateway = (overrides = {}) =>
    createGrantsGateway({ accessTokenFormat: format, signingKeys: [KEY_A], ...overrides });

  it('Number Verification: expires_in 300; the first call works, the next is 401 invalid_token', async () => {
    const gw = gateway();
    const events = recordEvents(gw.netauth);
    const tokens = await nvToken(gw);
    expect(tokens.expires_in).toBe(300);
    expect(events.of('token.issued')[0]).toMatchObject({ grantType: JWT_BEARER, singleUse: true });
    const token = tokens.access_token as string;
    if (format === 'jwt') {
      const claims = decodeJwt(token);
      expect(claims.single_use).toBe(true);
      expect(claims.exp! - claims.iat!).toBe(300);
    }
    const first = await callService(gw.app, token, VERIFY);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ verified: true, subscriber: 'sub-alice' });
    const second = await callService(gw.app, token, VERIFY);
    expect(second.status).toBe(401);
    expect(second.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('50 parallel calls with one single-use token: exactly one 200, the others 401', async () => {
    const gw = gateway({ rateLimits: false });
    const token = (await nvToken(gw)).access_token as string;
    const calls = await Promise.all(Array.from({ length: 50 }, () => callService(gw.app, token, VERIFY)));
    expect(calls.filter((r) => r.status === 200)).toHaveLength(1);
    expect(calls.filter((r) => r.status === 401 && r.body.error === 'invalid_token')).toHaveLength(49);
  });

  it('a call refused for another reason (a route the token does not cover: 403) does not spend it', async () => {
    const gw = gateway();
    const token = (await nvToken(gw)).access_token as string;
    expect((await callService(gw.app, token, '/sim-swap/check')).status).toBe(403);
    expect((await callService(gw.app, token, VERIFY)).status).toBe(200);
  });

  it('a call past token validation spends it whatever its answer: a wrong number (403) leaves nothing to retry', async () => {
    const gw = gateway();
    gw.app.post(
      '/number-verification/confirm',
      gw.netauth.guard({
        scope: 'number-verification',
        errorFormat: 'camara',
        device: { identifier: 'phoneNumber', confirm: true },
      }),
      (req, res) => {
        res.json({ devicePhoneNumberVerified: true, subscriber: req.netauth?.subscriber.id });
      },
    );
    const token = (await nvToken(gw)).access_token as string;
    const confirm = (phoneNumber: string) =>
      callService(gw.app, token, '/number-verification/confirm').send({ phoneNumber });
    const wrong = await confirm('+34600000002');
    expect(wrong.status).toBe(403);
    expect(wrong.body.code).toBe('INVALID_TOKEN_CONTEXT');
    // Finding 2 of issue 32: the right number after a wrong one must not be confirmable with the same token.
    const right = await confirm('+34600000001');
    expect(right.status).toBe(401);
    expect(right.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it("expires after the rule's 300 s, not the gateway's 3600", async () => {
    const gw = gateway();
    const token = (await nvToken(gw)).access_token as string;
    gw.clock.advance(301);
    expect((await callService(gw.app, token, VERIFY)).status).toBe(401);
  });

  it('introspection reports it without spending it; once spent, it is inactive', async () => {
    const gw = gateway();
    const code = await codeFor(gw, { client_id: 'offline-app', scope: NV });
    const res = await redeem(gw.app, { code, redirect_uri: CALLBACK }, OFFLINE_AUTH);
    expect(res.body.expires_in).toBe(300);
    const token = res.body.access_token as string;
    for (let i = 0; i < 3; i++) expect((await introspect(gw, token)).body).toMatchObject({ active: true, scope: NV });
    expect((await callService(gw.app, token, VERIFY)).status).toBe(200);
    expect((await introspect(gw, token)).body).toEqual({ active: false });
  });

  it('a token carrying a single-use scope and another is single use, with the shorter lifetime', async () => {
    const gw = gateway();
    const assertion = await bearerAssertion(
      'tel:+34600000001',
      'dpv:FraudPreventionAndDetection sim-swap number-verification',
      { now: Math.floor(gw.clock.now / 1000) },
    );
    const res = await tokenRequest(gw.app, { grant_type: JWT_BEARER, assertion });
    expect(res.body.expires_in).toBe(300);
    expect((await callService(gw.app, res.body.access_token as string, '/sim-swap/check')).status).toBe(200);
    expect((await callService(gw.app, res.body.access_token as string, VERIFY)).status).toBe(401);
  });

  it('revoked before use (RFC 7009): 401', async () => {
    const gw = gateway({
      clients: [
        BEARER_CLIENT,
        {
          clientId: 'offline-app',
          clientSecret: 'offline-secret',
          redirectUris: [CALLBACK],
          grantTypes: ['authorization_code'],
          scopes: ['dpv:FraudPreventionAndDetection#number-verification'],
        },
      ],
    });
    const code = await codeFor(gw, { client_id: 'offline-app', scope: NV });
    const token = (await redeem(gw.app, { code, redirect_uri: CALLBACK }, OFFLINE_AUTH)).body.access_token as string;
    expect(
      (await request(gw.app).post('/apigateway/revoke').set('Authorization', OFFLINE_AUTH).type('form').send({ token }))
        .status,
    ).toBe(200);
    expect((await callService(gw.app, token, VERIFY)).status).toBe(401);
  });
});

describe('JWT access tokens: only single-use ones cost the guard a store operation', () => {
  it('an ordinary JWT is verified with no store read; a single-use one is spent in the store', async () => {
    const store = new NoTokenReadStore(new MemoryStore());
    const gw = createGrantsGateway({ accessTokenFormat: 'jwt', signingKeys: [KEY_A], store });
    const now = Math.floor(gw.clock.now / 1000);
    const ordinary = await tokenRequest(gw.app, {
      grant_type: JWT_BEARER,
      assertion: await bearerAssertion('tel:+34600000001', 'dpv:FraudPreventionAndDetection sim-swap', { now }),
    });
    const single = await tokenRequest(gw.app, {
      grant_type: JWT_BEARER,
      assertion: await bearerAssertion('tel:+34600000001', NV, { now }),
    });
    // NoTokenReadStore refuses reads of token records: the guard never reads one.
    expect((await callService(gw.app, ordinary.body.access_token as string)).status).toBe(200);
    expect((await callService(gw.app, single.body.access_token as string, VERIFY)).status).toBe(200);
    expect((await callService(gw.app, single.body.access_token as string, VERIFY)).status).toBe(401);
  });
});
