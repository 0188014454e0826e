import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { SignJWT, UnsecuredJWT } from 'jose';
import type { Express } from 'express';
import type { RegisteredClient, SubscriberDirectory } from '../../../lib/index.js';
import { StaticSubscriberDirectory } from '../../../lib/index.js';
import {
  CLIENTS,
  ISSUER,
  LOCATION,
  SECRET,
  SIM_SWAP,
  SUBSCRIBERS,
  basic,
  createTestGateway,
  type TestGateway,
} from '../../helpers/gateway.js';
import { CALLBACK, authorize, callback, location } from '../../helpers/frontend.js';
import {
  CAMARA_CLIENT,
  CAMARA_KEY,
  FOREIGN_CAMARA_KEY,
  SIGNED_ONLY_CLIENT,
  assertionFields,
  clientAssertion,
  requestObject,
  type SignOptions,
} from '../../helpers/client-jwts.js';

const ALICE = 'tel:+34600000001';

/** A client_secret_basic client that registered keys too: it may sign its requests. */
const SECRET_CLIENT_WITH_KEYS: RegisteredClient = {
  ...CLIENTS[0]!,
  clientId: 'secret-with-keys',
  jwks: CAMARA_CLIENT.jwks!,
};

function gateway(overrides: Parameters<typeof createTestGateway>[0] = {}): TestGateway {
  return createTestGateway({
    clients: [...CLIENTS, CAMARA_CLIENT, SIGNED_ONLY_CLIENT, SECRET_CLIENT_WITH_KEYS],
    rateLimits: false,
    ...overrides,
  });
}

const nowOf = (gw: TestGateway): number => Math.floor(gw.clock.now / 1000);

/** The plain parameters CAMARA requires beside the request object, and nothing else. */
const PLAIN = {
  response_type: 'code',
  client_id: 'aggregator',
  redirect_uri: CALLBACK,
  scope: SIM_SWAP,
  state: undefined,
};

describe('GET /authorize with a request object (RFC 9101, CAMARA profile)', () => {
  const gw = gateway();
  const sign = (parameters: Record<string, string>, options: Partial<SignOptions> = {}) =>
    requestObject(
      { response_type: 'code', redirect_uri: CALLBACK, scope: SIM_SWAP, ...parameters },
      { now: nowOf(gw), ...options },
    );

  async function errorOf(query: Record<string, string | undefined>): Promise<Record<string, string>> {
    const res = await authorize(gw.app, { ...PLAIN, ...query });
    expect(res.status).toBe(302);
    const url = location(res);
    expect(`${url.origin}${url.pathname}`).toBe(CALLBACK);
    return callback(res);
  }

  it('a code, and the state of the request object (not a plain one)', async () => {
    const res = await authorize(gw.app, {
      ...PLAIN,
      state: 'plain-state',
      request: await sign({ state: 'signed-state', nonce: 'n-1' }),
    });
    expect(res.status).toBe(302);
    const q = callback(res);
    expect(q.code).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    expect(q.state).toBe('signed-state');
    expect(q.iss).toBe(ISSUER);
    const token = await request(gw.app)
      .post('/apigateway/token')
      .type('form')
      .send({
        grant_type: 'authorization_code',
        code: q.code,
        redirect_uri: CALLBACK,
        ...assertionFields(await clientAssertion({ now: nowOf(gw) })),
      });
    expect(token.status).toBe(200);
    expect(token.body.scope).toBe(SIM_SWAP);
  });

  it('only the signed parameters are used: plain extras are ignored, a plain state is not echoed', async () => {
    const q = callback(
      await authorize(gw.app, {
        ...PLAIN,
        state: 'plain',
        login_hint: 'tel:600',
        prompt: 'sometimes',
        response_mode: 'fragment',
        request: await sign({}),
      }),
    );
    expect(q.code).toBeDefined();
    expect(q.state).toBeUndefined();
    // And signed values are: an unknown signed prompt is an error, with the signed state.
    const signed = await sign({ prompt: 'sometimes', state: 's' });
    const bad = callback(await authorize(gw.app, { ...PLAIN, request: signed }));
    expect(bad).toMatchObject({ error: 'invalid_request', state: 's' });
  });

  it('acr_values is ignored, plain or signed', async () => {
    const q = callback(
      await authorize(gw.app, { ...PLAIN, acr_values: 'urn:x', request: await sign({ acr_values: 'gold silver' }) }),
    );
    expect(q.code).toBeDefined();
  });

  it.each([
    ['redirect_uri', { redirect_uri: 'https://app.example/other' }],
    ['scope', { scope: LOCATION }],
    ['response_type', { response_type: 'code id_token' }],
    ['client_id', { client_id: 'app-1' }],
  ])('a signed %s that differs from the plain one: invalid_request_object, without a state', async (_name, signed) => {
    const q = await errorOf({ state: 'plain', request: await sign({ state: 'signed', ...signed }) });
    expect(q.error).toBe('invalid_request_object');
    expect(q.state).toBeUndefined();
    expect(q.code).toBeUndefined();
  });

  it.each(['scope', 'response_type'])('no plain %s beside the request object: invalid_request_object', async (name) => {
    const q = await errorOf({ [name]: undefined, request: await sign({}) });
    expect(q.error).toBe('invalid_request_object');
  });

  it('client_id or redirect_uri only inside the request object: the error page, no redirect', async () => {
    for (const name of ['client_id', 'redirect_uri']) {
      const res = await authorize(gw.app, { ...PLAIN, [name]: undefined, request: await sign({}) });
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
    }
  });

  const refusals: Array<[string, (now: number) => Promise<string>]> = [
    ['expired', (now) => sign({}, { claims: { iat: now - 120, exp: now - 60 } })],
    ['exp - iat > 300 s', (now) => sign({}, { claims: { iat: now - 10, exp: now + 291 } })],
    ['iat in the future', (now) => sign({}, { claims: { iat: now + 60, exp: now + 120 } })],
    ['no iat', () => sign({}, { claims: { iat: undefined } })],
    ['no exp', () => sign({}, { claims: { exp: undefined } })],
    ['no jti', () => sign({}, { claims: { jti: undefined } })],
    ['aud another server', () => sign({}, { claims: { aud: 'https://other.example' } })],
    ['aud the token endpoint', () => sign({}, { claims: { aud: `${ISSUER}/token` } })],
    ['iss another client', () => sign({}, { claims: { iss: 'app-1' } })],
    ['a foreign key', () => sign({}, { key: FOREIGN_CAMARA_KEY })],
    ['typ of another kind of JWT', () => sign({}, { header: { typ: 'dpop+jwt' } })],
    ['a state that is not a string', () => sign({}, { claims: { state: 42 } })],
    ['a request inside the request object', () => sign({ request: 'x' })],
    [
      'alg: none',
      async (now) =>
        new UnsecuredJWT({
          ...PLAIN,
          client_id: 'aggregator',
          iss: 'aggregator',
          aud: ISSUER,
          iat: now,
          exp: now + 60,
          jti: randomUUID(),
        }).encode(),
    ],
    [
      'HS256 keyed with the public key',
      async (now) =>
        new SignJWT({
          response_type: 'code',
          client_id: 'aggregator',
          redirect_uri: CALLBACK,
          scope: SIM_SWAP,
          iss: 'aggregator',
          aud: ISSUER,
          iat: now,
          exp: now + 60,
          jti: randomUUID(),
        })
          .setProtectedHeader({ alg: 'HS256' })
          .sign(new TextEncoder().encode(JSON.stringify(CAMARA_KEY.publicJwk))),
    ],
    ['not a JWT', async () => 'eyJhbGciOiJub25lIn0.e30.'],
  ];

  it.each(refusals)('%s: invalid_request_object, without a state', async (_name, make) => {
    const q = await errorOf({ state: 'plain', request: await make(nowOf(gw)) });
    expect(q.error).toBe('invalid_request_object');
    expect(q.state).toBeUndefined();
    expect(q.error_description).toMatch(/^request object refused: |request object|string/);
  });

  it('aud: the issuer or the authorization endpoint', async () => {
    expect(
      callback(
        await authorize(gw.app, { ...PLAIN, request: await sign({}, { claims: { aud: `${ISSUER}/authorize` } }) }),
      ).code,
    ).toBeDefined();
  });

  it('a replayed request object: invalid_request_object', async () => {
    const signed = await sign({ state: 's' });
    expect(callback(await authorize(gw.app, { ...PLAIN, request: signed })).code).toBeDefined();
    expect((await errorOf({ request: signed })).error).toBe('invalid_request_object');
  });

  it('50 parallel uses of one request object: exactly one code', async () => {
    const signed = await sign({});
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => authorize(gw.app, { ...PLAIN, request: signed })),
    );
    const results = answers.map((res) => callback(res));
    expect(results.filter((q) => q.code !== undefined)).toHaveLength(1);
    expect(results.filter((q) => q.error === 'invalid_request_object')).toHaveLength(49);
  });

  it('a client without registered keys: invalid_request_object', async () => {
    const q = callback(
      await authorize(gw.app, {
        client_id: 'app-1',
        request: await sign({ client_id: 'app-1' }, { clientId: 'app-1' }),
      }),
    );
    expect(q.error).toBe('invalid_request_object');
  });

  it('request_uri: request_uri_not_supported, without a state', async () => {
    const q = await errorOf({ state: 'plain', request_uri: 'urn:ietf:params:oauth:request_uri:abc' });
    expect(q.error).toBe('request_uri_not_supported');
    expect(q.state).toBeUndefined();
  });

  it('requireSignedRequestObject: an unsigned request is invalid_request; a signed one is served', async () => {
    const unsigned = await errorOf({ client_id: 'signed-only', state: 'st' });
    expect(unsigned).toMatchObject({ error: 'invalid_request', state: 'st' });
    const signed = await sign({ client_id: 'signed-only' }, { clientId: 'signed-only' });
    expect(
      callback(await authorize(gw.app, { ...PLAIN, client_id: 'signed-only', request: signed })).code,
    ).toBeDefined();
  });
});

describe('POST /bc-authorize with a signed request (CIBA Core §7.1.1, CAMARA profile)', () => {
  const gw = gateway();
  const sign = (parameters: Record<string, string>, options: Partial<SignOptions> = {}) =>
    requestObject({ login_hint: ALICE, scope: SIM_SWAP, ...parameters }, { now: nowOf(gw), ...options });
  const post = async (app: Express, fields: Record<string, string>, clientId = 'aggregator') =>
    request(app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ ...fields, ...assertionFields(await clientAssertion({ now: nowOf(gw), clientId }), clientId) });

  it('login_hint and scope inside the signed request: 200 with an auth_req_id', async () => {
    const res = await post(gw.app, { request: await sign({}) });
    expect(res.status).toBe(200);
    expect(res.body.auth_req_id).toEqual(expect.any(String));
  });

  it('only the signed parameters are used: plain login_hint and scope are ignored', async () => {
    const res = await post(gw.app, { login_hint: 'tel:+34699999999', scope: 'dpv:Nothing#x', request: await sign({}) });
    expect(res.status).toBe(200);
  });

  it('a client_secret_basic client with registered keys may sign too', async () => {
    const signed = await sign({}, { clientId: 'secret-with-keys' });
    const res = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', basic('secret-with-keys', SECRET))
      .type('form')
      .send({ request: signed });
    expect(res.status).toBe(200);
  });

  it('acr_values, binding_message, user_code and requested_expiry are ignored, plain or signed', async () => {
    const ignored = { acr_values: 'urn:x', binding_message: 'hello', user_code: '1234', requested_expiry: 'soon' };
    expect((await post(gw.app, { login_hint: ALICE, scope: SIM_SWAP, ...ignored })).status).toBe(200);
    expect((await post(gw.app, { request: await sign(ignored) })).status).toBe(200);
  });

  it.each<[string, () => Promise<string>]>([
    ['expired', () => sign({}, { claims: { iat: nowOf(gw) - 120, exp: nowOf(gw) - 60 } })],
    ['exp - iat > 300 s', () => sign({}, { claims: { iat: nowOf(gw) - 10, exp: nowOf(gw) + 291 } })],
    ['no iat', () => sign({}, { claims: { iat: undefined } })],
    ['aud the authorization endpoint', () => sign({}, { claims: { aud: `${ISSUER}/authorize` } })],
    ['a foreign key', () => sign({}, { key: FOREIGN_CAMARA_KEY })],
    ['iss another client', () => sign({}, { claims: { iss: 'signed-only' } })],
    ['login_hint not a string', () => sign({}, { claims: { login_hint: ['tel:+34600000001'] } })],
    ['not a JWT', async () => 'garbage'],
  ])('%s: 400 invalid_request_object', async (_name, make) => {
    const res = await post(gw.app, { request: await make() });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request_object');
  });

  it('aud: the issuer or the backchannel authentication endpoint', async () => {
    expect(
      (await post(gw.app, { request: await sign({}, { claims: { aud: `${ISSUER}/bc-authorize` } }) })).status,
    ).toBe(200);
  });

  it('a replayed signed request: invalid_request_object', async () => {
    const signed = await sign({});
    expect((await post(gw.app, { request: signed })).status).toBe(200);
    expect((await post(gw.app, { request: signed })).body.error).toBe('invalid_request_object');
  });

  it('a verified request without login_hint, or with login_hint_token: invalid_request', async () => {
    const noHint = await requestObject({ scope: SIM_SWAP }, { now: nowOf(gw) });
    expect((await post(gw.app, { login_hint: ALICE, request: noHint })).body.error).toBe('invalid_request');
    expect((await post(gw.app, { request: await sign({ login_hint_token: 'x' }) })).body.error).toBe('invalid_request');
  });

  it('requireSignedRequestObject: unsigned is invalid_request; signed is served', async () => {
    const unsigned = await post(gw.app, { login_hint: ALICE, scope: SIM_SWAP }, 'signed-only');
    expect(unsigned.status).toBe(400);
    expect(unsigned.body.error).toBe('invalid_request');
    const signed = await post(gw.app, { request: await sign({}, { clientId: 'signed-only' }) }, 'signed-only');
    expect(signed.status).toBe(200);
  });
});

describe('login_hint operatortoken: (GSMA TS.43)', () => {
  const OPERATOR_TOKEN = 'a1b2c3-ts43-token';
  const statics = new StaticSubscriberDirectory(SUBSCRIBERS);
  const withTokens: SubscriberDirectory = {
    findByPhoneNumber: (n) => statics.findByPhoneNumber(n),
    findByNetworkAddress: (a) => statics.findByNetworkAddress(a),
    findByOperatorToken: async (token) =>
      token === OPERATOR_TOKEN ? { id: 'sub-alice', phoneNumber: '+34600000001' } : undefined,
  };
  const post = (gw: TestGateway, hint: string) =>
    request(gw.app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', basic('app-1', SECRET))
      .type('form')
      .send({ login_hint: hint, scope: SIM_SWAP });

  it('resolved by the directory’s findByOperatorToken', async () => {
    const gw = gateway({ subscribers: withTokens });
    expect((await post(gw, `operatortoken:${OPERATOR_TOKEN}`)).status).toBe(200);
    const unknown = await post(gw, 'operatortoken:someone-else');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('unknown_user_id');
  });

  it('without findByOperatorToken: unknown_user_id', async () => {
    const res = await post(gateway(), `operatortoken:${OPERATOR_TOKEN}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unknown_user_id');
  });

  it('at /authorize, an operatortoken naming the device’s subscriber is accepted', async () => {
    const gw = gateway({ subscribers: withTokens });
    expect(callback(await authorize(gw.app, { login_hint: `operatortoken:${OPERATOR_TOKEN}` })).code).toBeDefined();
    expect(callback(await authorize(gw.app, { login_hint: 'operatortoken:other' })).error).toBe('access_denied');
  });
});
