import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { ClientRegistry, NetAuthOptions, RegisteredClient } from '../../lib/index.js';
import { CLIENTS, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { CAMARA_CLIENT, CAMARA_KEY, assertionFields, clientAssertion } from '../helpers/client-jwts.js';
import { BEARER_CLIENT, GRANTS_POLICY, POPULATION, tokenRequest } from '../helpers/grants.js';

/** A client-credentials client registered the profile's way. */
const SERVICE_JWT_CLIENT: RegisteredClient = {
  clientId: 'service-jwt',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk] },
  grantTypes: ['client_credentials'],
  scopes: [POPULATION],
};
const PROFILE_CLIENTS = [CAMARA_CLIENT, BEARER_CLIENT, SERVICE_JWT_CLIENT];

/** The profile requires TLS: an https: issuer (supertest needs none). */
const CAMARA_ISSUER = 'https://gateway.test/apigateway';

function camaraGateway(overrides: Partial<NetAuthOptions> = {}): TestGateway {
  return createTestGateway({
    profile: 'camara',
    issuer: CAMARA_ISSUER,
    clients: PROFILE_CLIENTS,
    consentPolicy: GRANTS_POLICY,
    sendConsentConfirmation: async () => {},
    ...overrides,
  });
}

async function clientCredentials(gw: TestGateway) {
  const assertion = await clientAssertion({
    now: Math.floor(gw.clock.now / 1000),
    clientId: 'service-jwt',
    claims: { aud: gw.netauth.metadata().issuer },
  });
  const fields = assertionFields(assertion, 'service-jwt');
  return tokenRequest(gw.app, { grant_type: 'client_credentials', scope: POPULATION, ...fields });
}

describe("profile: 'camara' sets what the profile requires", () => {
  it('a client with a secret is a start-up error naming private_key_jwt', () => {
    const secret = /client app-1: profile 'camara' requires private_key_jwt, and this client uses client_secret_basic/;
    expect(() => camaraGateway({ clients: [...PROFILE_CLIENTS, CLIENTS[0]!] })).toThrow(secret);
    const post = {
      ...SERVICE_JWT_CLIENT,
      clientId: 'post',
      tokenEndpointAuthMethod: 'client_secret_post',
      clientSecret: 's',
    };
    expect(() => camaraGateway({ clients: [post as RegisteredClient] })).toThrow(/requires private_key_jwt/);
  });

  it('a custom registry must declare private_key_jwt as its only method', () => {
    const registry = (authMethods?: ClientRegistry['authMethods']): ClientRegistry => ({
      find: () => Promise.resolve(undefined),
      ...(authMethods === undefined ? {} : { authMethods }),
    });
    for (const clients of [registry(), registry(['client_secret_basic', 'private_key_jwt'])]) {
      expect(() => camaraGateway({ clients })).toThrow(
        /clients\.authMethods: profile 'camara' requires private_key_jwt/,
      );
    }
    expect(() => camaraGateway({ clients: registry(['private_key_jwt']) })).not.toThrow();
  });

  it('ID tokens cannot be turned off; an unknown profile is refused', () => {
    expect(() => camaraGateway({ idTokens: false })).toThrow(/idTokens: profile 'camara' requires ID tokens/);
    expect(() => camaraGateway({ profile: 'fapi' as 'camara' })).toThrow(/profile must be 'camara'/);
  });

  it("the guard answers in the CAMARA error format by default; a route may still choose 'oauth'", async () => {
    const gw = camaraGateway();
    gw.app.post(
      '/oauth-errors',
      gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'oauth' }),
      (_req, res) => void res.json({}),
    );
    const camara = await request(gw.app).post('/sim-swap/check');
    expect(camara.status).toBe(401);
    expect(camara.body).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    const oauth = await request(gw.app).post('/oauth-errors');
    expect(oauth.status).toBe(401);
    expect(oauth.body).toEqual({});
    // Without the profile, the OAuth format stays the default.
    const plain = createTestGateway();
    expect((await request(plain.app).post('/sim-swap/check')).body).toEqual({});
  });

  it('client-credentials (and JWT-bearer) tokens are short-lived by default (300 s), overridable', async () => {
    const short = await clientCredentials(camaraGateway());
    expect(short.status).toBe(200);
    expect(short.body.expires_in).toBe(300);
    const longer = await clientCredentials(camaraGateway({ lifetimes: { backendAccessToken: 900 } }));
    expect(longer.body.expires_in).toBe(900);
    // Without the profile: the access-token lifetime.
    const plain = await clientCredentials(
      createTestGateway({ clients: PROFILE_CLIENTS, consentPolicy: GRANTS_POLICY }),
    );
    expect(plain.body.expires_in).toBe(3600);
  });
});
