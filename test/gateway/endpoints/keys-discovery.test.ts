import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JWK } from 'jose';
import { ISSUER, SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { KEY_A, KEY_B, ecKey } from '../../helpers/keys.js';

describe('signing keys', () => {
  let stderr: string[];
  beforeEach(() => {
    stderr = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  // First in this file: the development-key warning is printed once per process.
  it('ID tokens without keys: an RS256 development key, published, with one loud warning', async () => {
    const { app, clock } = createTestGateway({ idTokens: true, pairwiseSalt: 'salt' });
    createTestGateway({ accessTokenFormat: 'jwt', pairwiseSalt: 'salt' });
    const warnings = stderr.filter((line) => line.includes('no signingKeys configured'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('DEVELOPMENT');

    const jwks = await request(app).get('/apigateway/jwks');
    expect(jwks.body.keys).toHaveLength(1);
    expect(jwks.body.keys[0]).toMatchObject({
      kty: 'RSA',
      alg: 'RS256',
      use: 'sig',
      kid: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    expect(jwks.body.keys[0]).not.toHaveProperty('d');
    const res = await pollToken(app, await startBackchannel(app, 'tel:+34600000001', `openid ${SIM_SWAP}`));
    await jwtVerify(res.body.id_token as string, createLocalJWKSet(jwks.body), {
      issuer: ISSUER,
      audience: 'app-1',
      currentDate: new Date(clock.now),
    });
  });

  it('nothing signed and no keys given: no key generated, an empty /jwks, openid not offered', async () => {
    const { app } = createTestGateway({ idTokens: false });
    expect(stderr.join('')).not.toContain('signingKeys');
    const metadata = (await request(app).get('/apigateway/.well-known/openid-configuration')).body;
    // Still named (OIDC Discovery §3 REQUIRED), with RS256 as Discovery asks.
    expect(metadata.jwks_uri).toBe(`${ISSUER}/jwks`);
    expect(metadata.id_token_signing_alg_values_supported).toEqual(['RS256']);
    expect(metadata.scopes_supported).not.toContain('openid');
    const jwks = await request(app).get('/apigateway/jwks');
    expect(jwks.status).toBe(200);
    expect(jwks.body).toEqual({ keys: [] });
  });

  it('without pairwiseSalt: a random salt, stable within the process, and one warning at start-up', async () => {
    const { app } = createTestGateway({ idTokens: true, signingKeys: [KEY_A], pairwiseSalt: undefined });
    createTestGateway({ pairwiseSalt: undefined });
    // Said when the gateway is created, before any token or introspection, and once per process.
    expect(stderr.filter((line) => line.includes('no pairwiseSalt configured'))).toHaveLength(1);
    const sub = async () =>
      decodeJwt(
        (await pollToken(app, await startBackchannel(app, 'tel:+34600000001', `openid ${SIM_SWAP}`))).body
          .id_token as string,
      ).sub;
    const first = await sub();
    expect(await sub()).toBe(first);
    expect(stderr.filter((line) => line.includes('no pairwiseSalt configured'))).toHaveLength(1);
  });

  it('refuses unusable keys with a clear error', () => {
    const { d: _d, ...publicOnly } = KEY_A;
    const cases: Array<[JWK[], RegExp]> = [
      [[publicOnly], /private JWK is needed/],
      [
        [{ kty: 'oct', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', d: 'x' } as JWK],
        /symmetric keys cannot be published/,
      ],
      [[KEY_A, { ...KEY_B, kid: 'key-a' }], /same kid/],
      [[{ ...KEY_A, alg: 'ES256' }], /alg ES256 does not fit/],
      [[{ ...KEY_A, use: 'enc' }], /use must be "sig"/],
      [[{ ...KEY_A, n: 'AQAB' }], /not a valid private JWK|at least 2048 bits/],
    ];
    for (const [signingKeys, message] of cases) {
      expect(() => createTestGateway({ idTokens: true, signingKeys })).toThrow(message);
    }
    expect(() => createTestGateway({ accessTokenFormat: 'paseto' as 'jwt' })).toThrow(/accessTokenFormat/);
    expect(() => createTestGateway({ pairwiseSalt: '' })).toThrow(/pairwiseSalt/);
  });
});

/** What OpenID Connect Discovery 1.0 §3 makes REQUIRED of every provider's metadata. */
const OIDC_REQUIRED = [
  'issuer',
  'authorization_endpoint',
  'token_endpoint',
  'jwks_uri',
  'response_types_supported',
  'subject_types_supported',
  'id_token_signing_alg_values_supported',
];

describe('discovery', () => {
  it.each<[string, Parameters<typeof createTestGateway>[0]]>([
    ['the defaults', {}],
    ['ID tokens off, opaque access tokens, no keys', { idTokens: false }],
    ['ID tokens off, JWT access tokens', { idTokens: false, accessTokenFormat: 'jwt', signingKeys: [KEY_A] }],
    ['an EC key', { signingKeys: [ecKey('ec')] }],
  ])('carries every member OIDC Discovery §3 makes REQUIRED, whatever the options: %s', async (_name, options) => {
    const { app } = createTestGateway(options);
    const res = await request(app).get('/apigateway/.well-known/openid-configuration');
    const metadata = res.body as Record<string, unknown>;
    for (const member of OIDC_REQUIRED) expect(metadata, member).toHaveProperty(member);
    expect(metadata.response_types_supported).toEqual(['code']);
    expect((metadata.id_token_signing_alg_values_supported as string[]).length).toBeGreaterThan(0);
    expect((await request(app).get('/apigateway/jwks')).status).toBe(200);
  });

  it('advertises introspection and revocation with the auth methods the registered clients use, always', async () => {
    const { app } = createTestGateway();
    const metadata = (await request(app).get('/apigateway/.well-known/openid-configuration')).body;
    expect(metadata).toMatchObject({
      introspection_endpoint: `${ISSUER}/introspect`,
      introspection_endpoint_auth_methods_supported: ['client_secret_basic'],
      revocation_endpoint: `${ISSUER}/revoke`,
      revocation_endpoint_auth_methods_supported: ['client_secret_basic'],
      subject_types_supported: ['pairwise'],
    });
  });

  it('with keys: jwks_uri, every published algorithm (the signing one first), openid among the scopes', async () => {
    const { app } = createTestGateway({ idTokens: true, signingKeys: [ecKey('ec'), KEY_A], pairwiseSalt: 'salt' });
    const metadata = (await request(app).get('/apigateway/.well-known/openid-configuration')).body;
    expect(metadata.jwks_uri).toBe(`${ISSUER}/jwks`);
    expect(metadata.id_token_signing_alg_values_supported).toEqual(['ES256', 'RS256']);
    expect(metadata.scopes_supported).toContain('openid');
    const rfc8414 = (await request(app).get('/apigateway/.well-known/oauth-authorization-server')).body;
    expect(rfc8414).toEqual(metadata);
    const jwks = await request(app).get('/apigateway/jwks');
    expect((jwks.body.keys as JWK[]).map((k) => [k.kid, k.alg, k.use])).toEqual([
      ['ec', 'ES256', 'sig'],
      ['key-a', 'RS256', 'sig'],
    ]);
    for (const key of jwks.body.keys as JWK[]) expect(Object.keys(key).sort()).not.toContain('d');
    expect((await request(app).post('/apigateway/jwks')).status).toBe(405);
  });

  it('configured keys without ID tokens or JWTs: keys published, openid not offered', async () => {
    const { app } = createTestGateway({ idTokens: false, signingKeys: [KEY_A] });
    const metadata = (await request(app).get('/apigateway/.well-known/openid-configuration')).body;
    expect(metadata.jwks_uri).toBe(`${ISSUER}/jwks`);
    expect(metadata.scopes_supported).not.toContain('openid');
  });
});
