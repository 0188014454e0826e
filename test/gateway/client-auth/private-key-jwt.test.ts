import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import type { Express } from 'express';
import {
  CLIENTS,
  ISSUER,
  SECRET,
  SIM_SWAP,
  basic,
  createTestGateway,
  type TestGateway,
} from '../../helpers/gateway.js';
import { recordEvents } from '../../helpers/events.js';
import { only } from '../../helpers/rate-limits.js';
import {
  ASSERTION_TYPE,
  CAMARA_CLIENT,
  CAMARA_EC_KEY,
  CAMARA_KEY,
  FOREIGN_CAMARA_KEY,
  assertionFields,
  clientAssertion,
  ecPair,
  edPair,
  rsaPair,
  signJwt,
  type SignOptions,
} from '../../helpers/client-jwts.js';
import type { RegisteredClient } from '../../../lib/index.js';

const ALICE = 'tel:+34600000001';
const PS_KEY = rsaPair('ps', 'PS256');
const ES384_KEY = ecPair('es384', 'ES384');
const ED_KEY = edPair('ed');

/** One more private_key_jwt client with a key of every accepted algorithm. */
const MULTI_ALG: RegisteredClient = {
  ...CAMARA_CLIENT,
  clientId: 'multi-alg',
  jwks: { keys: [PS_KEY.publicJwk, ES384_KEY.publicJwk, ED_KEY.publicJwk] },
};
/** An RSA key registered without `alg`, and the client restricted to PS256. */
const { alg: _alg, ...UNTAGGED_RSA } = CAMARA_KEY.publicJwk;
const PS256_ONLY: RegisteredClient = {
  ...CAMARA_CLIENT,
  clientId: 'ps256-only',
  jwks: { keys: [UNTAGGED_RSA] },
  signingAlgorithms: ['PS256'],
};

function gateway(): TestGateway {
  return createTestGateway({ clients: [...CLIENTS, CAMARA_CLIENT, MULTI_ALG, PS256_ONLY], rateLimits: false });
}

const nowOf = (gw: TestGateway): number => Math.floor(gw.clock.now / 1000);

function bcAuthorize(app: Express, fields: Record<string, string>) {
  return request(app)
    .post('/apigateway/bc-authorize')
    .type('form')
    .send({ login_hint: ALICE, scope: SIM_SWAP, ...fields });
}

function expectInvalidClient(res: request.Response): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
  expect(res.headers['cache-control']).toBe('no-store');
}

describe('private_key_jwt (RFC 7523 §2.2, CAMARA profile): accepted', () => {
  const gw = gateway();
  const sign = (options: Partial<SignOptions> = {}) => clientAssertion({ now: nowOf(gw), ...options });

  it('authenticates at bc-authorize, token, introspection and revocation', async () => {
    const started = await bcAuthorize(gw.app, assertionFields(await sign()));
    expect(started.status).toBe(200);
    const token = await request(gw.app)
      .post('/apigateway/token')
      .type('form')
      .send({
        grant_type: 'urn:openid:params:grant-type:ciba',
        auth_req_id: started.body.auth_req_id,
        ...assertionFields(await sign()),
      });
    expect(token.status).toBe(200);
    const introspected = await request(gw.app)
      .post('/apigateway/introspect')
      .type('form')
      .send({ token: token.body.access_token, ...assertionFields(await sign()) });
    expect(introspected.body).toMatchObject({ active: true, client_id: 'aggregator' });
    const revoked = await request(gw.app)
      .post('/apigateway/revoke')
      .type('form')
      .send({ token: token.body.access_token, ...assertionFields(await sign()) });
    expect(revoked.status).toBe(200);
    const after = await request(gw.app)
      .post('/apigateway/introspect')
      .type('form')
      .send({ token: token.body.access_token, ...assertionFields(await sign()) });
    expect(after.body).toEqual({ active: false });
  });

  it('aud: the issuer, the token endpoint, or the URL of the endpoint it is sent to', async () => {
    for (const aud of [ISSUER, `${ISSUER}/token`, `${ISSUER}/bc-authorize`, [`https://elsewhere.example`, ISSUER]]) {
      expect(
        (await bcAuthorize(gw.app, assertionFields(await sign({ claims: { aud } })))).status,
        JSON.stringify(aud),
      ).toBe(200);
    }
    const introspect = await request(gw.app)
      .post('/apigateway/introspect')
      .type('form')
      .send({ token: 'x', ...assertionFields(await sign({ claims: { aud: `${ISSUER}/introspect` } })) });
    expect(introspect.body).toEqual({ active: false });
  });

  it('a client restricted to PS256 signs with PS256', async () => {
    const res = await bcAuthorize(
      gw.app,
      assertionFields(await sign({ clientId: 'ps256-only', key: { ...CAMARA_KEY, alg: 'PS256' } }), 'ps256-only'),
    );
    expect(res.status).toBe(200);
  });

  it('every accepted algorithm: RS256, PS256, ES256, ES384, EdDSA', async () => {
    expect((await bcAuthorize(gw.app, assertionFields(await sign({ key: CAMARA_KEY })))).status).toBe(200);
    expect((await bcAuthorize(gw.app, assertionFields(await sign({ key: CAMARA_EC_KEY })))).status).toBe(200);
    for (const key of [PS_KEY, ES384_KEY, ED_KEY]) {
      const res = await bcAuthorize(gw.app, assertionFields(await sign({ key, clientId: 'multi-alg' }), 'multi-alg'));
      expect(res.status, key.alg).toBe(200);
    }
  });

  it('without a body client_id the client is named by the assertion; without iat; with typ JWT', async () => {
    const assertion = await sign({ claims: { iat: undefined }, header: { typ: 'JWT' } });
    const res = await bcAuthorize(gw.app, { client_assertion_type: ASSERTION_TYPE, client_assertion: assertion });
    expect(res.status).toBe(200);
  });

  it('exp exactly 300 s after receipt, exp - iat exactly 300 s, iat a few seconds ahead (clock skew)', async () => {
    const now = nowOf(gw);
    expect(
      (await bcAuthorize(gw.app, assertionFields(await sign({ claims: { iat: now, exp: now + 300 } })))).status,
    ).toBe(200);
    expect(
      (
        await bcAuthorize(
          gw.app,
          assertionFields(await sign({ claims: { iat: now + 3, exp: now + 60, nbf: now + 3 } })),
        )
      ).status,
    ).toBe(200);
  });
});

describe('clockTolerance: one tolerance for client assertions, request objects and JWT-bearer assertions', () => {
  it("with 0 (the profile's reading), an iat 3 s ahead is refused; at the default (5 s) it passes", async () => {
    const strict = createTestGateway({ clients: [...CLIENTS, CAMARA_CLIENT], rateLimits: false, clockTolerance: 0 });
    const lenient = gateway();
    for (const [gw, status] of [
      [strict, 401],
      [lenient, 200],
    ] as const) {
      const now = nowOf(gw);
      const assertion = await clientAssertion({ now, claims: { iat: now + 3, exp: now + 60 } });
      expect((await bcAuthorize(gw.app, assertionFields(assertion))).status).toBe(status);
    }
    // On time, the strict gateway accepts.
    const now = nowOf(strict);
    expect((await bcAuthorize(strict.app, assertionFields(await clientAssertion({ now })))).status).toBe(200);
  });

  it.each([-1, 2.5, 61, '5'])('refuses %s at start-up', (value) => {
    const create = () => createTestGateway({ clockTolerance: value as number });
    expect(create).toThrow(/clockTolerance must be a whole number of seconds from 0 to 60/);
  });
});

describe('private_key_jwt: refused with 401 invalid_client, as a wrong secret', () => {
  const gw = gateway();
  const events = recordEvents(gw.netauth);
  const now = () => nowOf(gw);
  const sign = (options: Partial<SignOptions> = {}) => clientAssertion({ now: now(), ...options });
  const publicKeyBytes = new TextEncoder().encode(JSON.stringify(CAMARA_KEY.publicJwk));

  const cases: Array<[string, () => Promise<Record<string, string>>]> = [
    ['expired', async () => assertionFields(await sign({ claims: { iat: now() - 120, exp: now() - 60 } }))],
    ['exp equal to now', async () => assertionFields(await sign({ claims: { iat: now() - 60, exp: now() } }))],
    ['exp - iat > 300 s', async () => assertionFields(await sign({ claims: { iat: now() - 200, exp: now() + 101 } }))],
    [
      'exp more than 300 s after receipt (no iat)',
      async () => assertionFields(await sign({ claims: { iat: undefined, exp: now() + 301 } })),
    ],
    ['iat in the future', async () => assertionFields(await sign({ claims: { iat: now() + 60, exp: now() + 120 } }))],
    ['nbf in the future', async () => assertionFields(await sign({ claims: { nbf: now() + 60 } }))],
    ['no exp', async () => assertionFields(await sign({ claims: { exp: undefined } }))],
    ['no jti', async () => assertionFields(await sign({ claims: { jti: undefined } }))],
    ['a jti that is not a string', async () => assertionFields(await sign({ claims: { jti: 7 } }))],
    [
      'wrong aud (another server)',
      async () => assertionFields(await sign({ claims: { aud: 'https://other-gateway.example/apigateway' } })),
    ],
    [
      'wrong aud (another endpoint of this server)',
      async () => assertionFields(await sign({ claims: { aud: `${ISSUER}/introspect` } })),
    ],
    ['no aud', async () => assertionFields(await sign({ claims: { aud: undefined } }))],
    ['iss another client', async () => assertionFields(await sign({ claims: { iss: 'app-1' } }))],
    ['sub another client', async () => assertionFields(await sign({ claims: { sub: 'app-1' } }))],
    ['no sub', async () => ({ ...assertionFields(await sign({ claims: { sub: undefined } })) })],
    [
      'signed by a foreign key with the registered kid',
      async () => assertionFields(await sign({ key: FOREIGN_CAMARA_KEY })),
    ],
    ['a kid nobody registered', async () => assertionFields(await sign({ header: { kid: 'unknown' } }))],
    [
      'alg: none',
      async () =>
        assertionFields(
          new UnsecuredJWT({
            iss: 'aggregator',
            sub: 'aggregator',
            aud: ISSUER,
            exp: now() + 60,
            jti: randomUUID(),
          }).encode(),
        ),
    ],
    [
      'HS256 keyed with the public key',
      async () =>
        assertionFields(
          await new SignJWT({
            iss: 'aggregator',
            sub: 'aggregator',
            aud: ISSUER,
            iat: now(),
            exp: now() + 60,
            jti: randomUUID(),
          })
            .setProtectedHeader({ alg: 'HS256', kid: CAMARA_KEY.publicJwk.kid })
            .sign(publicKeyBytes),
        ),
    ],
    [
      'an alg the client is not registered for',
      async () => assertionFields(await sign({ clientId: 'ps256-only', key: CAMARA_KEY }), 'ps256-only'),
    ],
    ['typ of a request object', async () => assertionFields(await sign({ header: { typ: 'oauth-authz-req+jwt' } }))],
    ['a signature cut off', async () => assertionFields((await sign()).replace(/\.[^.]+$/, '.'))],
    ['garbage', async () => assertionFields('not.a.jwt')],
    [
      'another assertion type',
      async () => ({
        ...assertionFields(await sign()),
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
      }),
    ],
    ['an assertion without its type', async () => ({ client_id: 'aggregator', client_assertion: await sign() })],
    ['a type without an assertion', async () => ({ client_id: 'aggregator', client_assertion_type: ASSERTION_TYPE })],
    ['an unknown client', async () => assertionFields(await sign({ clientId: 'nobody' }), 'nobody')],
    ['a body client_id of another client', async () => assertionFields(await sign(), 'app-1')],
    [
      'an assertion by a client_secret_basic client',
      async () => assertionFields(await sign({ clientId: 'app-1' }), 'app-1'),
    ],
  ];

  it.each(cases)('%s', async (_name, fields) => {
    const res = await bcAuthorize(gw.app, await fields());
    expectInvalidClient(res);
    // No Basic challenge after an assertion (RFC 6749 §5.2 asks for one after the Authorization header only).
    expect(res.headers['www-authenticate']).toBeUndefined();
  });

  it('a secret presented for a private_key_jwt client (Basic or in the body)', async () => {
    expectInvalidClient(
      await request(gw.app)
        .post('/apigateway/bc-authorize')
        .set('Authorization', basic('aggregator', SECRET))
        .type('form')
        .send({ login_hint: ALICE, scope: SIM_SWAP }),
    );
    expectInvalidClient(await bcAuthorize(gw.app, { client_id: 'aggregator', client_secret: 'anything' }));
  });

  it('an assertion and a secret at once: 400 invalid_request', async () => {
    const res = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', basic('app-1', SECRET))
      .type('form')
      .send({ login_hint: ALICE, scope: SIM_SWAP, ...assertionFields(await sign()) });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('a replayed jti, also after the first use failed elsewhere in the request', async () => {
    const assertion = await sign();
    expect((await bcAuthorize(gw.app, assertionFields(assertion))).status).toBe(200);
    expectInvalidClient(await bcAuthorize(gw.app, assertionFields(assertion)));
    // The same jti in a new assertion: still a replay.
    const jti = randomUUID();
    expect(
      (await bcAuthorize(gw.app, { ...assertionFields(await sign({ claims: { jti } })), scope: 'dpv:Nothing#x' })).body
        .error,
    ).toBe('invalid_scope');
    expectInvalidClient(await bcAuthorize(gw.app, assertionFields(await sign({ claims: { jti } }))));
  });

  it('a jti is single use per client: another client may use the same value', async () => {
    const jti = randomUUID();
    expect((await bcAuthorize(gw.app, assertionFields(await sign({ claims: { jti } })))).status).toBe(200);
    const other = await bcAuthorize(
      gw.app,
      assertionFields(await sign({ claims: { jti }, clientId: 'multi-alg', key: ED_KEY }), 'multi-alg'),
    );
    expect(other.status).toBe(200);
  });

  it('a used jti stays refused for as long as an assertion carrying it could be valid', async () => {
    const jti = randomUUID();
    const start = now();
    const fields = async () => assertionFields(await clientAssertion({ now: start, claims: { jti, exp: start + 30 } }));
    expect((await bcAuthorize(gw.app, await fields())).status).toBe(200);
    gw.clock.advance(20);
    expectInvalidClient(await bcAuthorize(gw.app, await fields()));
  });

  it('reports failures as invalid_credentials of the registered client, never the assertion', async () => {
    events.clear();
    const assertion = await sign({ key: FOREIGN_CAMARA_KEY });
    expectInvalidClient(await bcAuthorize(gw.app, assertionFields(assertion)));
    expectInvalidClient(await bcAuthorize(gw.app, assertionFields(await sign({ clientId: 'nobody' }), 'nobody')));
    expectInvalidClient(await bcAuthorize(gw.app, assertionFields('garbage')));
    await events.settle();
    expect(events.of('client.authentication_failed')).toEqual([
      { endpoint: 'bc-authorize', clientId: 'aggregator', reason: 'invalid_credentials', source: expect.any(String) },
      { endpoint: 'bc-authorize', reason: 'invalid_credentials', source: expect.any(String) },
      { endpoint: 'bc-authorize', clientId: 'aggregator', reason: 'invalid_credentials', source: expect.any(String) },
    ]);
    expect(JSON.stringify(events.all)).not.toContain(assertion.split('.')[2]);
  });
});

describe('private_key_jwt: failures count towards the client-authentication lock-out like wrong secrets', () => {
  it('past the failure threshold a bad assertion is answered 429, as a wrong secret would be', async () => {
    const gw = createTestGateway({
      clients: [...CLIENTS, CAMARA_CLIENT],
      rateLimits: only({ clientAuthentication: { perClientAndAddress: { failures: 3, duration: 60 } } }),
    });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await bcAuthorize(
        gw.app,
        assertionFields(await clientAssertion({ now: nowOf(gw), key: FOREIGN_CAMARA_KEY })),
      );
      statuses.push(res.status);
    }
    expect(statuses[0]).toBe(401);
    expect(statuses.at(-1)).toBe(429);
  });
});

describe('private_key_jwt: 50 parallel uses of one assertion (memory store)', () => {
  it('exactly one is accepted', async () => {
    const gw = gateway();
    const assertion = await clientAssertion({ now: nowOf(gw) });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        request(gw.app)
          .post('/apigateway/introspect')
          .type('form')
          .send({ token: 'x', ...assertionFields(assertion) }),
      ),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 401 && r.body.error === 'invalid_client')).toHaveLength(49);
  });
});

describe('signature checks use jose with the registered algorithms only', () => {
  it('a JWS signed with a key of the right type and kid but a different algorithm family is refused', async () => {
    const gw = gateway();
    // PS256 by the RS256-tagged key: the registered JWK says alg RS256, so jose does not select it for PS256.
    const assertion = await signJwt(
      { iss: 'aggregator', sub: 'aggregator', aud: ISSUER, iat: nowOf(gw), exp: nowOf(gw) + 60, jti: randomUUID() },
      { ...CAMARA_KEY, alg: 'PS256' },
    );
    expectInvalidClient(await bcAuthorize(gw.app, assertionFields(assertion)));
  });
});
