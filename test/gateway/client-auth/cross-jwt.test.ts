import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { RegisteredClient } from '../../../lib/index.js';
import { ISSUER, SIM_SWAP, type TestGateway } from '../../helpers/gateway.js';
import { CALLBACK, authorize, callback } from '../../helpers/frontend.js';
import {
  CAMARA_CLIENT,
  CAMARA_KEY,
  assertionFields,
  clientAssertion,
  requestObject,
  signJwt,
} from '../../helpers/client-jwts.js';
import {
  GRANTS_CLIENTS,
  JWT_BEARER,
  bearerAssertion,
  createGrantsGateway,
  tokenRequest,
} from '../../helpers/grants.js';

/**
 * Cross-JWT confusion (RFC 9101 §10.8, RFC 8725 §3.11; issue 32): a JWT signed by a client for
 * one purpose is never accepted for another. Request objects travel through browsers, so whoever sees one must not
 * be able to authenticate as the client with it, or to obtain a token for the subscriber it names.
 */

const ALICE = 'tel:+34600000001';

/** A CAMARA client that signs CIBA requests and uses the JWT bearer grant, with one key for everything. */
const BOTH_CLIENT: RegisteredClient = {
  ...CAMARA_CLIENT,
  clientId: 'both-app',
  grantTypes: [...CAMARA_CLIENT.grantTypes, JWT_BEARER],
};

function gateway(): TestGateway {
  return createGrantsGateway({ clients: [...GRANTS_CLIENTS, CAMARA_CLIENT, BOTH_CLIENT], rateLimits: false });
}

const nowOf = (gw: TestGateway): number => Math.floor(gw.clock.now / 1000);

/** What the issue's attacker replays: a signed authorization request, `sub` = client_id, `aud` the issuer, no `typ`. */
function browserRequestObject(gw: TestGateway, header: Record<string, unknown> = { typ: undefined }): Promise<string> {
  const parameters = { response_type: 'code', redirect_uri: CALLBACK, scope: SIM_SWAP, state: 's' };
  return requestObject(parameters, { now: nowOf(gw), claims: { sub: CAMARA_CLIENT.clientId }, header });
}

describe('a request object is not a client assertion', () => {
  const gw = gateway();

  const expectInvalidClient = (res: request.Response): void => {
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
  };

  it('replayed as client_assertion at /token and /bc-authorize: 401 invalid_client', async () => {
    for (const header of [{ typ: undefined }, { typ: 'JWT' }]) {
      const atToken = await tokenRequest(gw.app, {
        grant_type: 'client_credentials',
        ...assertionFields(await browserRequestObject(gw, header)),
      });
      expectInvalidClient(atToken);
      const atBackchannel = await request(gw.app)
        .post('/apigateway/bc-authorize')
        .type('form')
        .send({ login_hint: ALICE, scope: SIM_SWAP, ...assertionFields(await browserRequestObject(gw, header)) });
      expectInvalidClient(atBackchannel);
    }
  });

  const sign = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
    clientAssertion({ now: nowOf(gw), claims, header });

  it.each<[string, () => Promise<string>]>([
    ['response_type', () => sign({ response_type: 'code' })],
    ['redirect_uri', () => sign({ redirect_uri: CALLBACK })],
    ['login_hint', () => sign({ login_hint: ALICE })],
    ['request', () => sign({ request: 'x.y.z' })],
    ['a client_id other than iss', () => sign({ client_id: 'app-1' })],
    ['typ oauth-authz-req+jwt', () => sign({}, { typ: 'oauth-authz-req+jwt' })],
    ['typ dpop+jwt', () => sign({}, { typ: 'dpop+jwt' })],
    ['typ at+jwt', () => sign({}, { typ: 'application/at+jwt' })],
  ])(
    'a client assertion with %s: 401 invalid_client at /bc-authorize, /token, /introspect and /revoke',
    async (_name, make) => {
      const paths: Array<[string, Record<string, string>]> = [
        ['/apigateway/bc-authorize', { login_hint: ALICE, scope: SIM_SWAP }],
        ['/apigateway/token', { grant_type: 'client_credentials' }],
        ['/apigateway/introspect', { token: 'x' }],
        ['/apigateway/revoke', { token: 'x' }],
      ];
      for (const [path, fields] of paths) {
        expectInvalidClient(
          await request(gw.app)
            .post(path)
            .type('form')
            .send({ ...fields, ...assertionFields(await make()) }),
        );
      }
    },
  );

  it('a client assertion whose client_id is its iss still authenticates', async () => {
    const res = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({
        login_hint: ALICE,
        scope: SIM_SWAP,
        ...assertionFields(await sign({ client_id: CAMARA_CLIENT.clientId })),
      });
    expect(res.status).toBe(200);
  });
});

describe('a signed CIBA request is not a JWT bearer assertion', () => {
  const gw = gateway();
  const ciba = (claims: Record<string, unknown>, header: Record<string, unknown> = { typ: undefined }) =>
    requestObject(
      { login_hint: ALICE, scope: SIM_SWAP },
      { now: nowOf(gw), clientId: BOTH_CLIENT.clientId, claims, header },
    );

  it('with sub=tel:… and aud the token endpoint, as the only authentication: invalid_grant', async () => {
    for (const header of [{ typ: undefined }, { typ: 'JWT' }]) {
      const res = await tokenRequest(gw.app, {
        grant_type: JWT_BEARER,
        assertion: await ciba({ sub: ALICE, aud: `${ISSUER}/token` }, header),
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
    }
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ['redirect_uri', { redirect_uri: CALLBACK }, {}],
    ['response_type', { response_type: 'code' }, {}],
    ['a client_id other than iss', { client_id: 'app-1' }, {}],
    ['typ client-authentication+jwt', {}, { typ: 'client-authentication+jwt' }],
    ['typ dpop+jwt', {}, { typ: 'dpop+jwt' }],
  ])('a bearer assertion with %s: invalid_grant', async (_name, claims, header) => {
    const assertion = await signJwt(
      {
        iss: BOTH_CLIENT.clientId,
        sub: ALICE,
        aud: `${ISSUER}/token`,
        iat: nowOf(gw),
        exp: nowOf(gw) + 60,
        jti: randomUUID(),
        scope: SIM_SWAP,
        ...claims,
      },
      CAMARA_KEY,
      header,
    );
    const res = await tokenRequest(gw.app, { grant_type: JWT_BEARER, assertion });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });

  it('a bearer assertion with none of them: a token', async () => {
    const assertion = await bearerAssertion(ALICE, SIM_SWAP, { now: nowOf(gw), claims: { iss: BOTH_CLIENT.clientId } });
    expect((await tokenRequest(gw.app, { grant_type: JWT_BEARER, assertion })).status).toBe(200);
  });
});

describe('a request object that carries sub is refused', () => {
  const gw = gateway();
  const PLAIN = {
    response_type: 'code',
    client_id: CAMARA_CLIENT.clientId,
    redirect_uri: CALLBACK,
    scope: SIM_SWAP,
    state: undefined,
  };
  const sign = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
    requestObject(
      { response_type: 'code', redirect_uri: CALLBACK, scope: SIM_SWAP },
      { now: nowOf(gw), claims, header },
    );

  it('at /authorize: invalid_request_object', async () => {
    const q = callback(await authorize(gw.app, { ...PLAIN, request: await sign({ sub: CAMARA_CLIENT.clientId }) }));
    expect(q.error).toBe('invalid_request_object');
    expect(q.code).toBeUndefined();
  });

  it('at /bc-authorize: 400 invalid_request_object', async () => {
    const signed = await requestObject(
      { login_hint: ALICE, scope: SIM_SWAP },
      { now: nowOf(gw), claims: { sub: ALICE } },
    );
    const res = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ request: signed, ...assertionFields(await clientAssertion({ now: nowOf(gw) })) });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request_object');
  });

  it('typ absent, JWT or oauth-authz-req+jwt is accepted; client-authentication+jwt is not', async () => {
    for (const typ of [undefined, 'JWT', 'oauth-authz-req+jwt', 'application/oauth-authz-req+jwt']) {
      expect(callback(await authorize(gw.app, { ...PLAIN, request: await sign({}, { typ }) })).code).toBeDefined();
    }
    const q = callback(
      await authorize(gw.app, { ...PLAIN, request: await sign({}, { typ: 'client-authentication+jwt' }) }),
    );
    expect(q.error).toBe('invalid_request_object');
  });
});
