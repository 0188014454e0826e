import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import type { ClientRegistry, ConsentRule, NetAuthOptions, RegisteredClient } from '../../lib/index.js';
import { CIBA, basic, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import {
  CALLBACK,
  LOCATION,
  SIM_SWAP,
  authorize,
  consentForm,
  cookies,
  fromDevice,
  location,
} from '../helpers/frontend.js';
import {
  CAMARA_CLIENT,
  CAMARA_KEY,
  assertionFields,
  clientAssertion,
  requestObject,
  signJwt,
} from '../helpers/client-jwts.js';
import { BEARER_CLIENT, GRANTS_POLICY, JWT_BEARER, POPULATION, tokenRequest } from '../helpers/grants.js';
import { operatorChannel } from '../helpers/operator-channel.js';
import { memoryLogger } from '../helpers/memory-logger.js';

/**
 * Issue 41, "the preset completes": README.md's table of what `profile: 'camara'` sets, refuses and leaves to the
 * operator, checked row by row. Every row of the table has a test here named after its first cell, and every test
 * here names a row of the table.
 */

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The first cells of the preset table's rows (under "The CAMARA profile preset"), without the header. */
function tableRows(): string[] {
  const section = README.slice(README.indexOf('### The CAMARA profile preset'));
  const lines = section.slice(0, section.indexOf('\n## ')).split('\n');
  return lines
    .filter((line) => line.startsWith('|'))
    .slice(2)
    .map((line) => line.split('|')[1]!.trim());
}

/** The profile requires TLS: an https: issuer (supertest needs none). */
const ISSUER = 'https://gateway.test/apigateway';
const ALICE = 'tel:+34600000001';

/** Code flow, refresh tokens and client credentials, registered the profile's way. */
const OFFLINE_JWT_CLIENT: RegisteredClient = {
  ...CAMARA_CLIENT,
  clientId: 'offline-jwt',
  grantTypes: ['authorization_code', CIBA, 'refresh_token'],
  scopes: [SIM_SWAP, LOCATION],
};
const SERVICE_JWT_CLIENT: RegisteredClient = {
  clientId: 'service-jwt',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk] },
  grantTypes: ['client_credentials'],
  scopes: [POPULATION, SIM_SWAP],
};
const PRESET_CLIENTS = [CAMARA_CLIENT, OFFLINE_JWT_CLIENT, BEARER_CLIENT, SERVICE_JWT_CLIENT];

function preset(overrides: Partial<NetAuthOptions> = {}): TestGateway & { sms: ReturnType<typeof operatorChannel> } {
  const sms = operatorChannel();
  const gw = createTestGateway({
    profile: 'camara',
    issuer: ISSUER,
    clients: PRESET_CLIENTS,
    consentPolicy: GRANTS_POLICY,
    sendConsentConfirmation: sms.send,
    rateLimits: false,
    ...overrides,
  });
  return { ...gw, sms };
}

const nowOf = (gw: TestGateway): number => Math.floor(gw.clock.now / 1000);

/** private_key_jwt form fields for a client, its assertion addressed to this issuer. */
async function authFields(gw: TestGateway, clientId = CAMARA_CLIENT.clientId, claims: Record<string, unknown> = {}) {
  const assertion = await clientAssertion({ now: nowOf(gw), clientId, claims: { aud: ISSUER, ...claims } });
  return assertionFields(assertion, clientId);
}

/** The operator's TLS proxy (trusted on loopback) says the browser's request came over https. */
const HTTPS = ['X-Forwarded-Proto', 'https'] as const;

/** Path and query of a redirect under the issuer, for supertest. */
function pathOf(url: URL): string {
  expect(url.origin).toBe(new URL(ISSUER).origin);
  return `${url.pathname}${url.search}`;
}

/** GET /authorize as a client of the fixture from Alice's phone: the redirect's URL. */
async function authorizeAs(app: Express, clientId: string, query: Record<string, string>): Promise<URL> {
  const res = await authorize(app, { client_id: clientId, state: undefined, ...query });
  expect(res.status).toBe(302);
  return location(res);
}

/** The code flow to the token endpoint for a consent-free scope. */
async function codeFlowTokens(gw: TestGateway, clientId: string, scope: string) {
  const url = await authorizeAs(gw.app, clientId, { scope });
  const code = url.searchParams.get('code');
  expect(code).not.toBeNull();
  return tokenRequest(gw.app, {
    grant_type: 'authorization_code',
    code: code!,
    redirect_uri: CALLBACK,
    ...(await authFields(gw, clientId)),
  });
}

/** The consent page for device-location (basis consent) opened from Alice's phone, ready to answer. */
async function openConsent(gw: TestGateway) {
  const start = await authorize(gw.app, { client_id: CAMARA_CLIENT.clientId, scope: LOCATION, state: undefined }).set(
    ...HTTPS,
  );
  expect(start.status).toBe(302);
  const cookie = cookies(start);
  const pagePath = pathOf(location(start));
  const page = await request(gw.app)
    .get(pagePath)
    .set('Cookie', cookie)
    .set(...HTTPS);
  expect(page.status).toBe(200);
  return { cookie, pagePath, form: consentForm(page.text) };
}

/** A scripted Allow: the consent form POSTed as a page would, no code typed. The redirect's URL. */
async function scriptedAllow(gw: TestGateway): Promise<URL> {
  const { cookie, form } = await openConsent(gw);
  // From Alice's phone, as the page was opened: the answer must come from the line the request started on.
  const res = await fromDevice(request(gw.app).post('/apigateway/consent'))
    .set('Cookie', cookie)
    .set(...HTTPS)
    .type('form')
    .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
  expect(res.status).toBe(303);
  return location(res);
}

/** The policy with the consent rule's confirmation set as given. */
const policyWith = (confirmation: ConsentRule['confirmation']): ConsentRule[] =>
  GRANTS_POLICY.map((rule) => (rule.basis === 'consent' ? { ...rule, confirmation } : rule));

/** CAMARA Number Verification written as a plain rule (none of its token rules): the preset supplies them. */
const NV_SCOPE = 'number-verification:verify';
const NV = `dpv:FraudPreventionAndDetection#${NV_SCOPE}`;
const PLAIN_NV: ConsentRule = { purpose: 'FraudPreventionAndDetection', scope: NV_SCOPE, basis: 'legitimate-interest' };
const NV_CLIENT: RegisteredClient = { ...OFFLINE_JWT_CLIENT, clientId: 'nv-jwt', scopes: [NV] };
const NV_BEARER: RegisteredClient = { ...BEARER_CLIENT, scopes: [NV] };

/** The preset with Number Verification as a plain rule, and its API behind the guard (one answer per token). */
function nvPreset(): TestGateway {
  const gw = preset({
    clients: [CAMARA_CLIENT, NV_CLIENT, NV_BEARER],
    consentPolicy: [...GRANTS_POLICY, PLAIN_NV],
  });
  gw.app.post('/nv/verify', gw.netauth.guard({ scope: NV_SCOPE }), (req, res) => {
    res.json({ devicePhoneNumberVerified: true, identifiedBy: req.netauth?.identifiedBy });
  });
  return gw;
}

/** Each row's behaviour test, by the row's first cell. */
const ROWS: Record<string, () => Promise<void>> = {
  'Clients authenticate with `private_key_jwt` (MUST)': async () => {
    const { tokenEndpointAuthMethod: _method, jwks: _keys, ...registration } = SERVICE_JWT_CLIENT;
    const secret: RegisteredClient = { ...registration, clientId: 'secret', clientSecret: 's' };
    expect(() => preset({ clients: [...PRESET_CLIENTS, secret] })).toThrow(
      /client secret: profile 'camara' requires private_key_jwt, and this client uses client_secret_basic/,
    );
    expect(() => preset({ clients: { find: async () => undefined } })).toThrow(
      /clients\.authMethods: profile 'camara' requires private_key_jwt/,
    );
    expect(preset().netauth.metadata().token_endpoint_auth_methods_supported).toEqual(['private_key_jwt']);
  },

  'Client records held to the profile when used (MUST)': async () => {
    // A portal that declares the profile's method, and a record of it that still uses a secret.
    const record: RegisteredClient = {
      clientId: 'portal-secret',
      tokenEndpointAuthMethod: 'client_secret_basic',
      clientSecret: 'right-secret',
      grantTypes: ['client_credentials'],
      scopes: [POPULATION],
    };
    const portal: ClientRegistry = {
      authMethods: ['private_key_jwt'],
      find: async (clientId) => (clientId === record.clientId ? record : undefined),
    };
    const gw = preset({ clients: portal });
    const res = await tokenRequest(
      gw.app,
      { grant_type: 'client_credentials', scope: POPULATION },
      basic(record.clientId, 'right-secret'),
    );
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
  },

  'Signed authentication requests accepted (MUST)': async () => {
    const gw = preset();
    const signed = await requestObject(
      { response_type: 'code', redirect_uri: CALLBACK, scope: SIM_SWAP },
      { now: nowOf(gw), claims: { aud: ISSUER } },
    );
    const url = await authorizeAs(gw.app, CAMARA_CLIENT.clientId, { scope: SIM_SWAP, request: signed });
    expect(url.searchParams.get('code')).not.toBeNull();
  },

  '`openid` answered with an ID token (OIDC)': async () => {
    expect(() => preset({ idTokens: false })).toThrow(/idTokens: profile 'camara' requires ID tokens/);
    const gw = preset();
    const token = await codeFlowTokens(gw, CAMARA_CLIENT.clientId, `openid ${SIM_SWAP}`);
    expect(token.status).toBe(200);
    expect(token.body.id_token).toEqual(expect.any(String));
  },

  'TLS on every connection (MUST)': async () => {
    expect(() => preset({ issuer: 'http://gateway.test/apigateway' })).toThrow(
      "issuer: profile 'camara' requires TLS on every connection, and the issuer is http: on gateway.test; " +
        'give an https: issuer (http: only on localhost, 127.0.0.0/8 or ::1, for development)',
    );
    expect(() => preset({ issuer: 'http://10.0.0.1:3000/apigateway' })).toThrow(/issuer is http: on 10\.0\.0\.1:3000/);
    // Development on this machine stays plain.
    for (const issuer of ['http://localhost:3000/gw', 'http://127.0.0.2/gw', 'http://[::1]:3000/gw']) {
      const log = memoryLogger();
      expect(() => preset({ issuer, logger: log.logger })).not.toThrow();
      expect(log.text()).not.toContain('"option":"issuer"');
    }
  },

  'Consent capture that an app on the handset cannot complete (MUST)': async () => {
    // The rule leaves confirmation at its default, the hook is set: a scripted Allow gets the code page, no code.
    const gw = preset();
    const afterAllow = await scriptedAllow(gw);
    expect(afterAllow.searchParams.get('code')).toBeNull();
    expect(`${afterAllow.origin}${afterAllow.pathname}`).toBe(`${ISSUER}/consent`);
    expect(gw.sms.messages).toHaveLength(1);
    // Without the hook: a start-up error naming it.
    expect(() => preset({ sendConsentConfirmation: undefined })).toThrow(
      "consent policy rule dpv:FraudPreventionAndDetection#device-location: profile 'camara' requires the " +
        "operator-channel confirmation of consent (confirmation: 'required' by default) needs the " +
        'sendConsentConfirmation option, and none is configured',
    );
    // An explicit 'off' is the operator's choice, said at start-up; Allow then gives a code at once.
    const log = memoryLogger();
    const off = preset({ consentPolicy: policyWith('off'), sendConsentConfirmation: undefined, logger: log.logger });
    expect(log.lines()).toContainEqual(
      expect.objectContaining({
        option: 'consentPolicy',
        msg: expect.stringContaining(
          "consent for dpv:FraudPreventionAndDetection#device-location is recorded on the page's Allow alone",
        ),
      }),
    );
    expect((await scriptedAllow(off)).searchParams.get('code')).not.toBeNull();
    // Without the preset the default stays 'off' (with the same warning, options.test.ts).
    const plain = createTestGateway({
      issuer: ISSUER,
      clients: PRESET_CLIENTS,
      consentPolicy: GRANTS_POLICY,
      logger: memoryLogger().logger,
    });
    expect((await scriptedAllow(plain)).searchParams.get('code')).not.toBeNull();
  },

  'An `iat` in the future rejected (SHALL)': async () => {
    const gw = preset(); // clockTolerance left at its default (5 s)
    const now = nowOf(gw);
    const ahead = { iat: now + 3, exp: now + 60 };
    // A client assertion (private_key_jwt): invalid_client.
    const ciba = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ login_hint: ALICE, scope: SIM_SWAP, ...(await authFields(gw, CAMARA_CLIENT.clientId, ahead)) });
    expect(ciba.status).toBe(401);
    expect(ciba.body.error).toBe('invalid_client');
    // A request object at /authorize: invalid_request_object, to the redirect URI.
    const signed = await requestObject(
      { response_type: 'code', redirect_uri: CALLBACK, scope: SIM_SWAP },
      { now, claims: { aud: ISSUER, ...ahead } },
    );
    const refused = await authorizeAs(gw.app, CAMARA_CLIENT.clientId, { scope: SIM_SWAP, request: signed });
    expect(refused.searchParams.get('error')).toBe('invalid_request_object');
    expect(refused.searchParams.get('error_description')).toContain('its iat is in the future');
    // A JWT-bearer assertion: invalid_grant.
    const bearer = (claims: Record<string, unknown>) =>
      signJwt(
        { iss: BEARER_CLIENT.clientId, sub: ALICE, aud: `${ISSUER}/token`, exp: now + 60, scope: SIM_SWAP, ...claims },
        CAMARA_KEY,
      );
    const grant = async (claims: Record<string, unknown>) =>
      tokenRequest(gw.app, {
        grant_type: JWT_BEARER,
        assertion: await bearer({ jti: randomUUID(), ...claims }),
        ...(await authFields(gw, BEARER_CLIENT.clientId)),
      });
    const future = await grant({ iat: now + 3 });
    expect(future.status).toBe(400);
    expect(future.body).toMatchObject({ error: 'invalid_grant' });
    expect(future.body.error_description).toContain('its iat is in the future');
    // exp and nbf keep clockTolerance: an nbf 3 s ahead passes, an iat of now too.
    expect((await grant({ iat: now, nbf: now + 3 })).status).toBe(200);
    // Without the preset: clockTolerance for iat too.
    const plain = createTestGateway({ issuer: ISSUER, clients: PRESET_CLIENTS, consentPolicy: GRANTS_POLICY });
    const lenient = await request(plain.app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ login_hint: ALICE, scope: SIM_SWAP, ...(await authFields(plain, CAMARA_CLIENT.clientId, ahead)) });
    expect(lenient.status).toBe(200);
  },

  'Error bodies in the Commonalities format': async () => {
    const gw = preset();
    gw.app.post('/oauth-errors', gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'oauth' }), (_req, res) => {
      res.json({});
    });
    expect((await request(gw.app).post('/sim-swap/check')).body).toMatchObject({
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    expect((await request(gw.app).post('/oauth-errors')).body).toEqual({});
  },

  'Client credentials only for APIs without personal data (MUST)': async () => {
    const gw = preset();
    const ask = async (scope: string) =>
      tokenRequest(gw.app, {
        grant_type: 'client_credentials',
        scope,
        ...(await authFields(gw, SERVICE_JWT_CLIENT.clientId)),
      });
    expect((await ask(POPULATION)).status).toBe(200);
    const personal = await ask(SIM_SWAP);
    expect(personal.status).toBe(400);
    expect(personal.body.error).toBe('invalid_scope');
  },

  'Two-legged and JWT-bearer tokens short-lived (SHOULD)': async () => {
    for (const [lifetimes, expiresIn] of [
      [{}, 300],
      [{ backendAccessToken: 900 }, 900],
    ] as const) {
      const gw = preset({ lifetimes });
      const token = await tokenRequest(gw.app, {
        grant_type: 'client_credentials',
        scope: POPULATION,
        ...(await authFields(gw, SERVICE_JWT_CLIENT.clientId)),
      });
      expect(token.body.expires_in).toBe(expiresIn);
    }
  },

  'Refresh tokens only through `offline_access` (MUST)': async () => {
    const gw = preset();
    const withOffline = await codeFlowTokens(gw, OFFLINE_JWT_CLIENT.clientId, `openid offline_access ${SIM_SWAP}`);
    expect(withOffline.body.refresh_token).toEqual(expect.any(String));
    const without = await codeFlowTokens(gw, OFFLINE_JWT_CLIENT.clientId, `openid ${SIM_SWAP}`);
    expect(without.status).toBe(200);
    expect(without.body).not.toHaveProperty('refresh_token');
  },

  'Lenient `login_hint` at `/authorize` (RECOMMENDED)': async () => {
    const gw = preset();
    const url = await authorizeAs(gw.app, CAMARA_CLIENT.clientId, { scope: SIM_SWAP, login_hint: 'msisdn:garbage' });
    expect(url.searchParams.get('code')).not.toBeNull();
  },

  'DPoP request-binding claims announced (MUST, when required)': async () => {
    const gw = preset();
    const announced = async () =>
      (await request(gw.app).get('/apigateway/.well-known/openid-configuration')).body.camara_dpop_claims_required;
    expect(await announced()).toBeUndefined();
    // A route's requirement, added after the router was made: announced from then on.
    gw.app.post('/bound', gw.netauth.guard({ scope: 'sim-swap', dpopClaimsRequired: ['camara:bh'] }), (_q, r) => {
      r.json({});
    });
    expect(await announced()).toEqual(['camara:bh']);
    // The gateway-wide requirement and the routes': the union.
    const both = preset({ dpopClaimsRequired: ['camara:qh'] });
    both.netauth.guard({ scope: 'sim-swap', dpopClaimsRequired: ['camara:bh'] });
    expect(both.netauth.metadata().camara_dpop_claims_required).toEqual(['camara:qh', 'camara:bh']);
  },

  "Purpose and scopes announced in the profile's form": async () => {
    const { scopes_supported: scopes } = preset().netauth.metadata();
    // The registration form, kept, and the values a CAMARA request's scope carries.
    expect(scopes).toEqual(
      expect.arrayContaining([SIM_SWAP, 'dpv:FraudPreventionAndDetection', 'sim-swap', 'population-density']),
    );
    expect(scopes).toContain('dpv:RequestedServiceProvision');
    // A purpose whose every rule is forbidden is not offered.
    expect(scopes).not.toContain('dpv:Marketing');
    expect(scopes.filter((s) => s === 'device-location')).toHaveLength(1);
  },
  'Number Verification tokens: single use, at most 300 s, never refreshed (MUST)': async () => {
    const gw = nvPreset();
    const token = await codeFlowTokens(gw, NV_CLIENT.clientId, `openid offline_access ${NV}`);
    expect(token.status).toBe(200);
    expect(token.body.expires_in).toBeLessThanOrEqual(300);
    expect(token.body).not.toHaveProperty('refresh_token');
    expect(token.body.scope).not.toContain('offline_access');
    const verify = () => request(gw.app).post('/nv/verify').set('Authorization', `Bearer ${token.body.access_token}`);
    expect((await verify()).status).toBe(200);
    expect((await verify()).status).toBe(401);
  },

  'Number Verification only for a subscriber the network identified (MUST)': async () => {
    const gw = nvPreset();
    // The backend flows name the subscriber by a number the client typed: nothing to verify.
    const ciba = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ login_hint: ALICE, scope: NV, ...(await authFields(gw, NV_CLIENT.clientId)) });
    expect(ciba.status).toBe(403);
    expect(ciba.body.error).toBe('access_denied');
    const now = nowOf(gw);
    const bearer = await tokenRequest(gw.app, {
      grant_type: JWT_BEARER,
      assertion: await signJwt(
        {
          iss: NV_BEARER.clientId,
          sub: ALICE,
          aud: `${ISSUER}/token`,
          iat: now,
          exp: now + 60,
          jti: randomUUID(),
          scope: NV,
        },
        CAMARA_KEY,
      ),
      ...(await authFields(gw, NV_BEARER.clientId)),
    });
    expect(bearer.status).toBe(400);
    expect(bearer.body.error).toBe('invalid_grant');
    // From the device's own network: verified, and the grant says how.
    const network = await codeFlowTokens(gw, NV_CLIENT.clientId, NV);
    const answer = await request(gw.app).post('/nv/verify').set('Authorization', `Bearer ${network.body.access_token}`);
    expect(answer.body).toEqual({ devicePhoneNumberVerified: true, identifiedBy: 'network' });
  },
};

describe("README's table of the CAMARA preset (profile: 'camara')", () => {
  it('every row of the table has its test here, and every test its row', () => {
    expect(tableRows().sort()).toEqual(Object.keys(ROWS).sort());
  });

  for (const [row, test] of Object.entries(ROWS)) it(row, test);
});
