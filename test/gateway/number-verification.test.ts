import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { decodeJwt } from 'jose';
import {
  StaticSubscriberDirectory,
  type ConsentPolicy,
  type ConsentRule,
  type NetAuthOptions,
  type RegisteredClient,
  type Subscriber,
} from '../../lib/index.js';
import { CIBA, POLICY, SUBSCRIBERS, basic, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ALICE_IP, CALLBACK, authorize, callback } from '../helpers/frontend.js';
import { CAMARA_KEY, assertionFields, clientAssertion } from '../helpers/client-jwts.js';
import {
  GRANTS_POLICY,
  JWT_BEARER,
  bearerAssertion,
  createGrantsGateway,
  OFFLINE_AUTH,
  refresh,
} from '../helpers/grants.js';
import { KEY_A } from '../helpers/keys.js';
import { memoryLogger } from '../helpers/memory-logger.js';
import { operatorChannel } from '../helpers/operator-channel.js';

/**
 * Number Verification verifies (issue 41): its CAMARA scopes get the API definition's token rules (single use,
 * at most 300 s, never a refresh token) under the preset whatever the rule says, and a warning without it; a grant
 * with a single-use scope never gets a refresh token; how the subscriber was identified travels with the grant
 * (amr, introspection, req.netauth); and a scope that requires network authentication (Number Verification's by
 * default) is refused to a subscriber the client named.
 */

const PURPOSE = 'FraudPreventionAndDetection';
const VERIFY = 'number-verification:verify';
/** The CAMARA form of the request scope. */
const NV = `dpv:${PURPOSE} ${VERIFY}`;
const SIM_SWAP = `dpv:${PURPOSE} sim-swap`;
const REGISTERED = [`dpv:${PURPOSE}#${VERIFY}`, `dpv:${PURPOSE}#sim-swap`];
const NV_ROUTE = '/number-verification/v2/verify';
const ALICE = '+34600000001';
const OPERATOR_TOKEN = 'ts43-token-of-alice';
/** The preset requires TLS: an https: issuer (supertest needs none), which client JWTs name as their audience. */
const HTTPS_ISSUER = 'https://gateway.test/apigateway';

/** Number Verification written as a plain rule: nothing of its token rules. */
const PLAIN_NV: ConsentRule = { purpose: PURPOSE, scope: VERIFY, basis: 'legitimate-interest' };
/** The rule as the API definition has it. */
const COMPLETE_NV: ConsentRule = { ...PLAIN_NV, singleUseAccessToken: true, accessTokenLifetime: 300 };

const SECRET_CLIENT: RegisteredClient = {
  clientId: 'nv-app',
  clientSecret: 'nv-secret',
  redirectUris: [CALLBACK],
  grantTypes: ['authorization_code', CIBA, 'refresh_token'],
  scopes: REGISTERED,
};
const SECRET_AUTH = basic('nv-app', 'nv-secret');
/** The same, registered the profile's way. */
const KEY_CLIENT: RegisteredClient = {
  clientId: 'nv-key-app',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk] },
  redirectUris: [CALLBACK],
  grantTypes: ['authorization_code', CIBA, 'refresh_token'],
  scopes: REGISTERED,
};
/** The JWT bearer grant's backend (its assertions: test/helpers/grants.ts). */
const BEARER: RegisteredClient = {
  clientId: 'backend-app',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk] },
  grantTypes: [JWT_BEARER],
  scopes: REGISTERED,
};

/** The fixture's directory, plus GSMA TS.43 operator tokens (the directory's optional method). */
class OperatorTokenDirectory extends StaticSubscriberDirectory {
  async findByOperatorToken(token: string): Promise<Subscriber | undefined> {
    return token === OPERATOR_TOKEN ? this.findById('sub-alice') : undefined;
  }
}

/** The test gateway, and whether its client authenticates with private_key_jwt (under the preset). */
type NvGateway = TestGateway & { keyed: boolean };

function nvGateway(overrides: Partial<NetAuthOptions> = {}): NvGateway {
  const camara = overrides.profile === 'camara';
  const gw = createTestGateway({
    clients: [camara ? KEY_CLIENT : SECRET_CLIENT, BEARER],
    consentPolicy: [...POLICY, PLAIN_NV],
    subscribers: new OperatorTokenDirectory(SUBSCRIBERS),
    signingKeys: [KEY_A],
    ...overrides,
  });
  gw.app.post(NV_ROUTE, gw.netauth.guard({ scope: VERIFY, errorFormat: 'oauth' }), (req, res) => {
    res.json({ devicePhoneNumberVerified: true, identifiedBy: req.netauth?.identifiedBy });
  });
  return { ...gw, keyed: camara };
}

/** The client's authentication on one request: its secret, or a fresh private_key_jwt assertion under the preset. */
async function clientAuth(gw: NvGateway): Promise<{ header?: string; fields: Record<string, string> }> {
  if (!gw.keyed) return { header: SECRET_AUTH, fields: {} };
  const assertion = await clientAssertion({
    now: Math.floor(gw.clock.now / 1000),
    clientId: KEY_CLIENT.clientId,
    claims: { aud: HTTPS_ISSUER },
  });
  return { fields: assertionFields(assertion, KEY_CLIENT.clientId) };
}

/** Under the preset: an https: issuer, and the operator's channel that confirms consent (the fixture's consent rules). */
function camaraGateway(overrides: Partial<NetAuthOptions> = {}): NvGateway {
  return nvGateway({
    profile: 'camara',
    issuer: HTTPS_ISSUER,
    sendConsentConfirmation: operatorChannel().send,
    ...overrides,
  });
}

async function post(gw: NvGateway, path: string, body: Record<string, string>): Promise<request.Response> {
  const auth = await clientAuth(gw);
  const req = request(gw.app).post(`/apigateway/${path}`).type('form');
  if (auth.header !== undefined) req.set('Authorization', auth.header);
  return req.send({ ...auth.fields, ...body });
}

/** CIBA: bc-authorize with the hint, then the poll's answer (approved at once: no hook, legitimate interest). */
async function ciba(gw: NvGateway, hint: string, scope: string): Promise<request.Response> {
  const started = await post(gw, 'bc-authorize', { login_hint: hint, scope });
  if (started.status !== 200) return started;
  return post(gw, 'token', { grant_type: CIBA, auth_req_id: started.body.auth_req_id as string });
}

/** The code flow from Alice's device (the network identifies her), with the query's overrides. */
async function codeFlow(gw: NvGateway, scope: string, query: Record<string, string> = {}) {
  const clientId = gw.keyed ? KEY_CLIENT.clientId : SECRET_CLIENT.clientId;
  const res = await authorize(gw.app, { client_id: clientId, scope, ...query }, { ip: ALICE_IP });
  expect(res.status).toBe(302);
  const { code } = callback(res);
  expect(code).toBeDefined();
  return post(gw, 'token', { grant_type: 'authorization_code', code: code!, redirect_uri: CALLBACK });
}

async function jwtBearer(gw: NvGateway, sub: string, scope: string): Promise<request.Response> {
  const now = Math.floor(gw.clock.now / 1000);
  const assertion = await bearerAssertion(
    sub,
    scope,
    gw.keyed ? { now, claims: { aud: `${HTTPS_ISSUER}/token` } } : { now },
  );
  return request(gw.app).post('/apigateway/token').type('form').send({ grant_type: JWT_BEARER, assertion });
}

const callNv = (gw: NvGateway, token: string) => request(gw.app).post(NV_ROUTE).set('Authorization', `Bearer ${token}`);

const introspect = (gw: NvGateway, token: string) => post(gw, 'introspect', { token });

describe("Number Verification under profile: 'camara': the API definition's token rules whatever the rule says", () => {
  it('number-verification:verify as a plain rule: the code flow with offline_access gets a 300 s, single-use token and no refresh token', async () => {
    const gw = camaraGateway();
    const res = await codeFlow(gw, `openid ${NV} offline_access`);
    expect(res.status).toBe(200);
    expect(res.body.expires_in).toBe(300);
    expect(res.body.refresh_token).toBeUndefined();
    // offline_access is not granted (OIDC Core §11), and the granted scope says so.
    expect(res.body.scope).toBe(`openid ${NV}`);
    const token = res.body.access_token as string;
    const first = await callNv(gw, token);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ devicePhoneNumberVerified: true, identifiedBy: 'network' });
    // One answer per authorization: the token is spent, and there is nothing to refresh it with.
    expect((await callNv(gw, token)).status).toBe(401);
  });

  it('a rule that says otherwise is overruled: 3600 s, not single use, network authentication off', async () => {
    const lax: ConsentRule = { ...PLAIN_NV, accessTokenLifetime: 3600, singleUseAccessToken: false };
    const gw = camaraGateway({ consentPolicy: [...POLICY, { ...lax, requireNetworkAuthentication: false }] });
    const res = await codeFlow(gw, NV);
    expect(res.body.expires_in).toBe(300);
    const token = res.body.access_token as string;
    expect((await callNv(gw, token)).status).toBe(200);
    expect((await callNv(gw, token)).status).toBe(401);
    expect((await ciba(gw, `tel:${ALICE}`, NV)).body.error).toBe('access_denied');
  });

  it('NV through a CIBA tel: hint or a JWT-bearer phone-number sub gets no token, so the NV route never answers 200', async () => {
    const gw = camaraGateway();
    const viaCiba = await post(gw, 'bc-authorize', { login_hint: `tel:${ALICE}`, scope: NV });
    expect(viaCiba.status).toBe(403);
    expect(viaCiba.body.error).toBe('access_denied');
    expect(viaCiba.body.error_description).toMatch(
      /requires the subscriber identified by the mobile network or an operator token/,
    );
    const viaBearer = await jwtBearer(gw, `tel:${ALICE}`, NV);
    expect(viaBearer.status).toBe(400);
    expect(viaBearer.body.error).toBe('invalid_grant');
    expect(viaBearer.body.error_description).toMatch(/not by a phone number the client supplied/);
    // Nothing was issued: the route has no token to answer.
    expect(viaCiba.body.access_token).toBeUndefined();
    expect(viaBearer.body.access_token).toBeUndefined();
    // The same requests for a scope that does not need the network go through.
    expect((await ciba(gw, `tel:${ALICE}`, SIM_SWAP)).status).toBe(200);
    expect((await jwtBearer(gw, `tel:${ALICE}`, SIM_SWAP)).status).toBe(200);
    // The operator token (SIM-based authentication) is what NV accepts in the backend flows: one answer each.
    for (const answer of [
      await ciba(gw, `operatortoken:${OPERATOR_TOKEN}`, NV),
      await jwtBearer(gw, `operatortoken:${OPERATOR_TOKEN}`, NV),
    ]) {
      expect(answer.status).toBe(200);
      expect(answer.body.expires_in).toBeLessThanOrEqual(300);
      const token = answer.body.access_token as string;
      expect((await callNv(gw, token)).body).toEqual({
        devicePhoneNumberVerified: true,
        identifiedBy: 'operatortoken',
      });
      expect((await callNv(gw, token)).status).toBe(401);
    }
  });

  it('no Number Verification warning under the preset', () => {
    const log = memoryLogger();
    camaraGateway({ logger: log.logger });
    expect(log.text()).not.toMatch(/Number Verification/);
  });
});

describe('Number Verification without the preset', () => {
  it('a start-up warning where a rule for an NV scope lacks its token rules; none for the complete rule', () => {
    const plain = memoryLogger();
    nvGateway({ logger: plain.logger });
    const nvWarnings = (log: ReturnType<typeof memoryLogger>) =>
      log.lines().filter((l) => l.option === 'consentPolicy' && /Number Verification/.test(String(l.msg)));
    const warnings = nvWarnings(plain);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(
      /dpv:FraudPreventionAndDetection#number-verification:verify is a CAMARA Number Verification scope.*lacks singleUseAccessToken: true, accessTokenLifetime of at most 300\b.*profile: 'camara'/,
    );
    const complete = memoryLogger();
    nvGateway({ logger: complete.logger, consentPolicy: [...POLICY, COMPLETE_NV] });
    expect(nvWarnings(complete)).toEqual([]);
    const hinted = memoryLogger();
    nvGateway({
      logger: hinted.logger,
      consentPolicy: [...POLICY, { ...COMPLETE_NV, requireNetworkAuthentication: false }],
    });
    expect(nvWarnings(hinted)[0]?.msg).toMatch(/requireNetworkAuthentication left on/);
  });

  it('the NV scopes require network authentication by default: CIBA tel: and ipport: access_denied, JWT bearer tel: invalid_grant', async () => {
    const gw = nvGateway({ consentPolicy: [...POLICY, COMPLETE_NV] });
    const tel = await post(gw, 'bc-authorize', { login_hint: `tel:${ALICE}`, scope: NV });
    expect(tel.status).toBe(403);
    expect(tel.body).toEqual({
      error: 'access_denied',
      error_description:
        'dpv:FraudPreventionAndDetection#number-verification:verify requires the subscriber identified by the mobile network or an operator token, not by a phone number the client supplied',
    });
    const ipport = await post(gw, 'bc-authorize', { login_hint: `ipport:${ALICE_IP}`, scope: NV });
    expect(ipport.status).toBe(403);
    expect(ipport.body.error_description).toMatch(/not by an address the client supplied$/);
    // Refused before the lookup: a number nobody has gets the same answer, so the refusal tells nothing of it.
    const unknown = await post(gw, 'bc-authorize', { login_hint: 'tel:+34699999999', scope: NV });
    expect(unknown.status).toBe(403);
    expect(unknown.body.error).toBe('access_denied');
    const bearer = await jwtBearer(gw, `tel:${ALICE}`, NV);
    expect(bearer.status).toBe(400);
    expect(bearer.body.error).toBe('invalid_grant');
  });

  it('the code flow with a tel: hint from the device: the network identifies it, so NV is granted', async () => {
    const gw = nvGateway({ consentPolicy: [...POLICY, COMPLETE_NV] });
    const res = await codeFlow(gw, NV, { login_hint: `tel:${ALICE}` });
    expect(res.status).toBe(200);
    expect((await callNv(gw, res.body.access_token as string)).body.identifiedBy).toBe('network');
  });

  it('in sandbox mode the hint names the line: NV is refused at /authorize with access_denied', async () => {
    const gw = nvGateway({
      consentPolicy: [...POLICY, COMPLETE_NV],
      sandbox: { allowList: [`tel:${ALICE}`] },
      network: undefined,
    });
    const res = await authorize(gw.app, { client_id: SECRET_CLIENT.clientId, scope: NV, login_hint: `tel:${ALICE}` });
    expect(res.status).toBe(302);
    expect(callback(res)).toMatchObject({
      error: 'access_denied',
      error_description: expect.stringMatching(/not by a phone number the client supplied/),
    });
    // sim-swap needs no network authentication: the sandbox's line is served.
    const swap = await authorize(gw.app, {
      client_id: SECRET_CLIENT.clientId,
      scope: SIM_SWAP,
      login_hint: `tel:${ALICE}`,
    });
    expect(callback(swap).code).toBeDefined();
  });

  it('requireNetworkAuthentication on any rule; false on an NV rule lets hints through; not a boolean: start-up error', async () => {
    const strict: ConsentRule = {
      purpose: PURPOSE,
      scope: 'sim-swap',
      basis: 'legitimate-interest',
      requireNetworkAuthentication: true,
    };
    const others = POLICY.filter((r) => r.scope !== 'sim-swap');
    const gw = nvGateway({
      consentPolicy: [...others, strict, { ...COMPLETE_NV, requireNetworkAuthentication: false }],
    });
    expect((await ciba(gw, `tel:${ALICE}`, SIM_SWAP)).body.error).toBe('access_denied');
    expect((await ciba(gw, `tel:${ALICE}`, NV)).status).toBe(200);
    const bad = { ...COMPLETE_NV, requireNetworkAuthentication: 'yes' } as unknown as ConsentRule;
    expect(() => nvGateway({ consentPolicy: [...POLICY, bad] })).toThrow(
      /dpv:FraudPreventionAndDetection#number-verification:verify: requireNetworkAuthentication must be true or false/,
    );
  });
});

describe('the guard: an NV route never answers a token whose subscriber the client named', () => {
  it('a token issued while the rule let hints through is 403 insufficient_scope once the rule requires the network', async () => {
    // An operator's policy (a ConsentPolicy) whose NV rule said requireNetworkAuthentication: false when the token
    // was issued, and leaves it at its default (on) since: as a token of an earlier version would find it.
    let network: false | undefined = false;
    const rule = (): ConsentRule => ({ ...COMPLETE_NV, requireNetworkAuthentication: network });
    const policy: ConsentPolicy = {
      rule: (purpose, scope) =>
        purpose === PURPOSE && scope === VERIFY
          ? rule()
          : POLICY.find((r) => r.purpose === purpose && r.scope === scope),
      rules: () => [...POLICY, rule()],
    };
    const gw = nvGateway({ consentPolicy: policy, accessTokenFormat: 'jwt' });
    const named = await ciba(gw, `tel:${ALICE}`, NV);
    expect(named.status).toBe(200);
    const fromNetwork = await codeFlow(gw, NV);
    network = undefined;
    const refused = await callNv(gw, named.body.access_token as string);
    expect(refused.status).toBe(403);
    expect(refused.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(refused.body.error_description).toBe(
      'dpv:FraudPreventionAndDetection#number-verification:verify requires the subscriber identified by the mobile network or an operator token',
    );
    // Refused before it was spent; the device's own token is answered.
    expect((await callNv(gw, fromNetwork.body.access_token as string)).status).toBe(200);
  });
});

describe('a grant with a single-use scope never gets a refresh token (with or without the preset)', () => {
  const SINGLE_USE = 'dpv:FraudPreventionAndDetection number-verification';

  it('code flow and CIBA: offline_access is not granted and the scope says so; at most one answer', async () => {
    const gw = createGrantsGateway();
    const code = await authorize(gw.app, { client_id: 'offline-app', scope: `${SINGLE_USE} offline_access` });
    const viaCode = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', OFFLINE_AUTH)
      .type('form')
      .send({ grant_type: 'authorization_code', code: callback(code).code!, redirect_uri: CALLBACK });
    const started = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', OFFLINE_AUTH)
      .type('form')
      .send({ login_hint: `tel:${ALICE}`, scope: `${SINGLE_USE} offline_access` });
    const viaCiba = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', OFFLINE_AUTH)
      .type('form')
      .send({ grant_type: CIBA, auth_req_id: started.body.auth_req_id as string });
    for (const res of [viaCode, viaCiba]) {
      expect(res.status).toBe(200);
      expect(res.body.refresh_token).toBeUndefined();
      expect(res.body.scope).toBe(SINGLE_USE);
      const token = res.body.access_token as string;
      const call = () => request(gw.app).post('/number-verification/verify').set('Authorization', `Bearer ${token}`);
      expect((await call()).status).toBe(200);
      expect((await call()).status).toBe(401);
    }
    // The same client, a scope that is not single use: the refresh token as before.
    const swap = await authorize(gw.app, { client_id: 'offline-app', scope: `${SIM_SWAP} offline_access` });
    const withRefresh = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', OFFLINE_AUTH)
      .type('form')
      .send({ grant_type: 'authorization_code', code: callback(swap).code!, redirect_uri: CALLBACK });
    expect(withRefresh.body.refresh_token).toEqual(expect.any(String));
  });

  it('a refresh never mints a single-use token: a grant whose scope became single use is invalid_grant', async () => {
    // An operator's policy (a ConsentPolicy) that makes number-verification single use after the grant was made,
    // as a refresh token issued by an earlier version would find it.
    let singleUse = false;
    const rule = (): ConsentRule => ({
      purpose: PURPOSE,
      scope: 'number-verification',
      basis: 'legitimate-interest',
      singleUseAccessToken: singleUse,
    });
    const policy: ConsentPolicy = {
      rule: (purpose, scope) =>
        purpose === PURPOSE && scope === 'number-verification'
          ? rule()
          : GRANTS_POLICY.find((r) => r.purpose === purpose && r.scope === scope),
      rules: () => GRANTS_POLICY.map((r) => (r.scope === 'number-verification' ? rule() : r)),
    };
    const gw = createGrantsGateway({ consentPolicy: policy });
    const code = await authorize(gw.app, { client_id: 'offline-app', scope: `${SINGLE_USE} offline_access` });
    const tokens = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', OFFLINE_AUTH)
      .type('form')
      .send({ grant_type: 'authorization_code', code: callback(code).code!, redirect_uri: CALLBACK });
    expect(tokens.body.refresh_token).toEqual(expect.any(String));
    singleUse = true;
    const refused = await refresh(gw.app, tokens.body.refresh_token as string);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: 'invalid_grant',
      error_description: "this grant's scope has single-use access tokens, which are never refreshed; authorize again",
    });
  });
});

describe.each(['opaque', 'jwt'] as const)(
  'how the subscriber was identified, per kind (%s access tokens)',
  (format) => {
    const cases = [
      { kind: 'network', amr: ['hwk'], run: (gw: NvGateway) => codeFlow(gw, `openid ${SIM_SWAP}`) },
      {
        kind: 'operatortoken',
        amr: ['hwk'],
        run: (gw: NvGateway) => ciba(gw, `operatortoken:${OPERATOR_TOKEN}`, `openid ${SIM_SWAP}`),
      },
      { kind: 'tel', amr: ['hint'], run: (gw: NvGateway) => ciba(gw, `tel:${ALICE}`, `openid ${SIM_SWAP}`) },
      { kind: 'ipport', amr: ['hint'], run: (gw: NvGateway) => ciba(gw, `ipport:${ALICE_IP}`, `openid ${SIM_SWAP}`) },
    ] as const;

    it.each(cases)(
      '$kind: amr $amr in the ID token, identified_by and amr at introspection, req.netauth.identifiedBy',
      async ({ kind, amr, run }) => {
        const gw = nvGateway({ accessTokenFormat: format });
        gw.app.post('/who', gw.netauth.guard({ scope: 'sim-swap' }), (req, res) => {
          res.json({ identifiedBy: req.netauth?.identifiedBy });
        });
        const res = await run(gw);
        expect(res.status).toBe(200);
        expect(decodeJwt(res.body.id_token as string).amr).toEqual(amr);
        const token = res.body.access_token as string;
        const introspection = await introspect(gw, token);
        expect(introspection.body).toMatchObject({ active: true, identified_by: kind, amr });
        if (format === 'jwt') expect(decodeJwt(token)).toMatchObject({ identified_by: kind, amr });
        const who = await request(gw.app).post('/who').set('Authorization', `Bearer ${token}`);
        expect(who.body).toEqual({ identifiedBy: kind });
      },
    );
  },
);
