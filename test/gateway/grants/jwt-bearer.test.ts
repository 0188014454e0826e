import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import * as client from 'openid-client';
import { importJWK } from 'jose';
import { StaticSubscriberDirectory, type SubscriberDirectory } from '../../../lib/index.js';
import { CLIENTS, SIM_SWAP, SUBSCRIBERS, basic } from '../../helpers/gateway.js';
import { LOCATION } from '../../helpers/frontend.js';
import { listen } from '../../helpers/listen.js';
import { recordEvents } from '../../helpers/events.js';
import { only } from '../../helpers/rate-limits.js';
import {
  CAMARA_CLIENT,
  CAMARA_KEY,
  FOREIGN_CAMARA_KEY,
  assertionFields,
  clientAssertion,
} from '../../helpers/client-jwts.js';
import {
  BEARER_CLIENT,
  GRANTS_CLIENTS,
  JWT_BEARER,
  bearerAssertion,
  callService,
  createGrantsGateway,
  tokenRequest,
} from '../../helpers/grants.js';
import type { TestGateway } from '../../helpers/gateway.js';

/**
 * The JWT bearer grant (RFC 7523 §2.1 as the CAMARA profile has it): a backend asserts the subscriber (`sub`
 * tel: or operatortoken:) and the purpose and scopes (`scope` claim), signed with its key; the assertion may be
 * its only client authentication. Errors follow the profile's Appendix A: invalid_grant for an assertion that is
 * not valid (unknown subscriber, no consent, replayed), invalid_request for a `scope` parameter.
 */

const ALICE = 'tel:+34600000001';
const CAMARA_SIM_SWAP = 'dpv:FraudPreventionAndDetection sim-swap';

function nowOf(gw: TestGateway): number {
  return Math.floor(gw.clock.now / 1000);
}

/** POST /token with the assertion as the only client authentication (CAMARA's example request). */
function bearer(gw: TestGateway, assertion: string, extra: Record<string, string> = {}, authorization?: string) {
  return tokenRequest(gw.app, { grant_type: JWT_BEARER, assertion, ...extra }, authorization);
}

describe.each(['opaque', 'jwt'] as const)('JWT bearer grant (%s access tokens)', (format) => {
  const gateway = (overrides = {}) => createGrantsGateway({ accessTokenFormat: format, ...overrides });

  it('the assertion alone: a token for the asserted subscriber, no refresh token, the granted scope without offline_access', async () => {
    const gw = gateway();
    const events = recordEvents(gw.netauth);
    const assertion = await bearerAssertion(ALICE, `${CAMARA_SIM_SWAP} offline_access`, { now: nowOf(gw) });
    const res = await bearer(gw, assertion);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(Object.keys(res.body as object).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: CAMARA_SIM_SWAP });
    const api = await callService(gw.app, res.body.access_token as string);
    expect(api.status).toBe(200);
    expect(api.body).toMatchObject({
      subscriber: 'sub-alice',
      clientId: 'backend-app',
      purpose: 'FraudPreventionAndDetection',
    });
    expect(events.of('token.issued')).toEqual([
      {
        clientId: 'backend-app',
        subscriberId: 'sub-alice',
        identifiedBy: 'tel',
        purpose: 'FraudPreventionAndDetection',
        scopes: ['sim-swap'],
        grantType: JWT_BEARER,
        format,
        idToken: false,
        refreshToken: false,
        singleUse: false,
      },
    ]);
  });

  it("with private_key_jwt client authentication as well; the assertion must then be that client's", async () => {
    const gw = gateway();
    const withAuth = await bearer(
      gw,
      await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw) }),
      assertionFields(await clientAssertion({ now: nowOf(gw), clientId: 'backend-app' }), 'backend-app'),
    );
    expect(withAuth.status).toBe(200);
    // Another client (registered for the grant too) presenting backend-app's assertion.
    const other = { ...BEARER_CLIENT, clientId: 'backend-2' };
    const gw2 = gateway({ clients: [...GRANTS_CLIENTS, other] });
    const foreign = await bearer(
      gw2,
      await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw2) }),
      assertionFields(await clientAssertion({ now: nowOf(gw2), clientId: 'backend-2' }), 'backend-2'),
    );
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toBe('invalid_grant');
  });

  it.each([
    ['an unknown sub', { sub: 'tel:+34699999999' }],
    ['a sub that is not tel: or operatortoken:', { sub: 'ipport:10.20.0.1' }],
    ['a malformed tel: sub', { sub: 'tel:34600000001' }],
    ['no sub', { sub: undefined }],
    ['an operatortoken: the directory cannot resolve', { sub: 'operatortoken:abc' }],
    ['no scope claim', { scope: undefined }],
    ['an empty scope claim', { scope: ' ' }],
    ['a scope claim that is not a string', { scope: ['dpv:FraudPreventionAndDetection', 'sim-swap'] }],
    ['a forbidden purpose', { scope: 'dpv:Marketing#device-location' }],
    ['an aud that is not this server', { aud: 'https://other.example/token' }],
    ['no iat', { iat: undefined }],
    ['exp more than 300 s away', { exp: 'far' }],
    ['exp - iat over 300 s', { iat: 'early' }],
    ['an expired assertion', { exp: 'past' }],
    ['no jti', { jti: undefined }],
  ] as Array<[string, Record<string, unknown>]>)('%s: invalid_grant', async (_name, claims) => {
    const gw = gateway();
    const now = nowOf(gw);
    const times: Record<string, number> = { far: now + 301, early: now - 250, past: now - 10 };
    const resolved = Object.fromEntries(
      Object.entries(claims).map(([k, v]) => [k, typeof v === 'string' && v in times ? times[v]! : v]),
    );
    // exp - iat over 300 s with exp itself close: iat long ago.
    if (claims.iat === 'early') resolved.exp = now + 60;
    const res = await bearer(gw, await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now, claims: resolved }));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });

  it("signed by a key that is not the client's: 401 invalid_client, an unknown id's answer (issue 42, finding 10); typed as a client assertion: invalid_grant", async () => {
    const gw = gateway();
    const foreign = await bearer(
      gw,
      await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw), key: FOREIGN_CAMARA_KEY }),
    );
    expect([foreign.status, foreign.body.error]).toEqual([401, 'invalid_client']);
    expect(
      (
        await bearer(
          gw,
          await bearerAssertion(ALICE, CAMARA_SIM_SWAP, {
            now: nowOf(gw),
            header: { typ: 'client-authentication+jwt' },
          }),
        )
      ).body.error,
    ).toBe('invalid_grant');
  });

  it('a replayed jti: invalid_grant; of 50 parallel uses of one assertion exactly one gets a token', async () => {
    const gw = gateway({ rateLimits: false });
    const assertion = await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw) });
    const answers = await Promise.all(Array.from({ length: 50 }, () => bearer(gw, assertion)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(49);
    expect((await bearer(gw, assertion)).body.error).toBe('invalid_grant');
  });

  it('a scope parameter: invalid_request, and the assertion is not spent', async () => {
    const gw = gateway();
    const assertion = await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw) });
    const res = await bearer(gw, assertion, { scope: CAMARA_SIM_SWAP });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect((await bearer(gw, assertion)).status).toBe(200);
  });

  it('consent needed and not on record: invalid_grant; once granted out-of-band, a token; refused: invalid_grant', async () => {
    const gw = gateway();
    const missing = await bearer(gw, await bearerAssertion(ALICE, LOCATION, { now: nowOf(gw) }));
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_grant');
    await gw.netauth.consent.grant({ clientId: 'backend-app', login_hint: ALICE, scope: LOCATION });
    const granted = await bearer(gw, await bearerAssertion(ALICE, LOCATION, { now: nowOf(gw) }));
    expect(granted.status).toBe(200);
    expect(
      (
        await request(gw.app)
          .get('/location')
          .set('Authorization', `Bearer ${granted.body.access_token as string}`)
      ).status,
    ).toBe(200);
    // Withdrawn: the token issued under it goes, and no new one is issued.
    await gw.netauth.consent.deny({ clientId: 'backend-app', login_hint: ALICE, scope: LOCATION });
    expect(
      (
        await request(gw.app)
          .get('/location')
          .set('Authorization', `Bearer ${granted.body.access_token as string}`)
      ).status,
    ).toBe(401);
    expect((await bearer(gw, await bearerAssertion(ALICE, LOCATION, { now: nowOf(gw) }))).body.error).toBe(
      'invalid_grant',
    );
  });

  it('a scope the client is not registered for, or an unknown one: invalid_scope', async () => {
    const gw = gateway();
    expect(
      (await bearer(gw, await bearerAssertion(ALICE, 'dpv:FraudPreventionAndDetection#unknown', { now: nowOf(gw) })))
        .body.error,
    ).toBe('invalid_scope');
    expect(
      (await bearer(gw, await bearerAssertion(ALICE, 'dpv:Marketing#sim-swap', { now: nowOf(gw) }))).body.error,
    ).toBe('invalid_scope');
  });

  it("operatortoken: resolved by the directory's findByOperatorToken", async () => {
    const statics = new StaticSubscriberDirectory(SUBSCRIBERS);
    const subscribers: SubscriberDirectory = {
      findByPhoneNumber: (n) => statics.findByPhoneNumber(n),
      findByNetworkAddress: (a) => statics.findByNetworkAddress(a),
      findByOperatorToken: async (token) => (token === 'tok-123' ? { id: 'sub-bob' } : undefined),
    };
    const gw = gateway({ subscribers });
    const res = await bearer(gw, await bearerAssertion('operatortoken:tok-123', CAMARA_SIM_SWAP, { now: nowOf(gw) }));
    expect(res.status).toBe(200);
    expect((await callService(gw.app, res.body.access_token as string)).body.subscriber).toBe('sub-bob');
  });

  it('no client credentials and an iss naming no private_key_jwt client, or a body client_id of another: 401 invalid_client', async () => {
    const gw = gateway();
    const now = nowOf(gw);
    for (const iss of ['nobody', 'app-1']) {
      const res = await bearer(gw, await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now, claims: { iss } }));
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_client');
    }
    expect((await bearer(gw, 'not-a-jwt')).status).toBe(401);
    const mismatch = await bearer(gw, await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now }), {
      client_id: 'aggregator',
    });
    expect(mismatch.status).toBe(401);
  });

  it('a client not registered for the grant: unauthorized_client; no assertion: invalid_request', async () => {
    const gw = gateway({ clients: [...GRANTS_CLIENTS, CAMARA_CLIENT] });
    const res = await bearer(
      gw,
      await bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw), claims: { iss: 'aggregator' } }),
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
    const none = await tokenRequest(gw.app, {
      grant_type: JWT_BEARER,
      ...assertionFields(await clientAssertion({ now: nowOf(gw), clientId: 'backend-app' }), 'backend-app'),
    });
    expect(none.body.error).toBe('invalid_request');
    expect((await tokenRequest(gw.app, { grant_type: JWT_BEARER })).body.error).toBe('invalid_request');
    // A client registered with a secret is refused before anything else, as for any grant.
    expect(
      (await tokenRequest(gw.app, { grant_type: JWT_BEARER }, basic('app-1', CLIENTS[0]!.clientSecret!))).body.error,
    ).toBe('unauthorized_client');
  });
});

describe("JWT bearer: the assertion as client authentication takes the authenticator's one failure path", () => {
  it('failed assertions count towards the lock-out per (client, address), then 429 even for a valid one', async () => {
    const budget = 3;
    const rule = { failures: budget, duration: 900 };
    const limits = only({ clientAuthentication: { perClientAndAddress: rule, perAddress: rule } });
    const gw = createGrantsGateway({ rateLimits: limits });
    const events = recordEvents(gw.netauth);
    const server = await listen(gw.app);
    const post = (ip: string, assertion: string) =>
      fetch(`${server.url}/apigateway/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
        body: new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString(),
      });
    const forged = () => bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw), key: FOREIGN_CAMARA_KEY });
    const valid = () => bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw) });
    const naming = (iss: string) => bearerAssertion(ALICE, CAMARA_SIM_SWAP, { now: nowOf(gw), claims: { iss } });
    try {
      // Forged assertions for a registered client: an unknown id's 401, each one spending the budget.
      for (let i = 0; i < budget; i++) {
        const res = await post('203.0.113.9', await forged());
        expect(res.status).toBe(401);
        expect(((await res.json()) as { error: string }).error).toBe('invalid_client');
      }
      for (const assertion of [await forged(), await valid()]) {
        const locked = await post('203.0.113.9', assertion);
        expect(locked.status).toBe(429);
        expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(((await locked.json()) as { error: string }).error).toBe('temporarily_unavailable');
      }
      // From another address the client is served.
      expect((await post('203.0.113.10', await valid())).status).toBe(200);
      // An iss that names no client counts per address.
      for (let i = 0; i < budget; i++) {
        expect((await post('198.51.100.9', await naming(`nobody-${i}`))).status).toBe(401);
      }
      expect((await post('198.51.100.9', await naming('nobody'))).status).toBe(429);
      const refused = { endpoint: 'token', reason: 'invalid_credentials', source: expect.any(String) };
      expect(events.of('client.authentication_failed')).toEqual([
        ...Array.from({ length: budget }, () => ({ ...refused, clientId: 'backend-app' })),
        ...Array.from({ length: budget }, () => refused),
      ]);
      expect(events.of('rate.limited')).toEqual([
        { endpoint: 'token', limit: 'client_authentication', clientId: 'backend-app', retryAfter: expect.any(Number) },
        { endpoint: 'token', limit: 'client_authentication', clientId: 'backend-app', retryAfter: expect.any(Number) },
        { endpoint: 'token', limit: 'client_authentication', retryAfter: expect.any(Number) },
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('interop: openid-client v6 genericGrantRequest with the JWT bearer grant', () => {
  let close: () => Promise<void>;
  let base: string;

  beforeAll(async () => {
    const host = express();
    const server = await listen(host);
    base = server.url;
    host.use(createGrantsGateway({ issuer: `${base}/apigateway`, now: Date.now }).app);
    close = server.close;
  });
  afterAll(() => close());

  async function configuration(auth: client.ClientAuth): Promise<client.Configuration> {
    return client.discovery(new URL(`${base}/apigateway`), 'backend-app', undefined, auth, {
      execute: [client.allowInsecureRequests],
    });
  }

  const assertion = (config: client.Configuration) =>
    bearerAssertion(ALICE, CAMARA_SIM_SWAP, {
      now: Math.floor(Date.now() / 1000),
      claims: { aud: config.serverMetadata().token_endpoint },
    });

  it.each([
    ['the assertion as the only client authentication (client.None())', () => client.None()],
    [
      'with private_key_jwt',
      async () => {
        const { alg: _alg, ...jwk } = CAMARA_KEY.privateJwk;
        return client.PrivateKeyJwt({
          key: (await importJWK(jwk, CAMARA_KEY.alg)) as client.CryptoKey,
          kid: CAMARA_KEY.privateJwk.kid!,
        });
      },
    ],
  ] as const)('%s: a token the service API takes', async (_name, auth) => {
    const config = await configuration(await auth());
    expect(config.serverMetadata().grant_types_supported).toContain(JWT_BEARER);
    const tokens = await client.genericGrantRequest(config, JWT_BEARER, { assertion: await assertion(config) });
    expect(tokens.scope).toBe(CAMARA_SIM_SWAP);
    expect(tokens.refresh_token).toBeUndefined();
    const api = await fetch(`${base}/sim-swap/check`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(api.status).toBe(200);
    const unknown = await client
      .genericGrantRequest(config, JWT_BEARER, {
        assertion: await bearerAssertion('tel:+34699999999', SIM_SWAP, { now: Math.floor(Date.now() / 1000) }),
      })
      .catch((e: unknown) => e);
    expect((unknown as client.ResponseBodyError).error).toBe('invalid_grant');
  });
});
