import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { Express } from 'express';
import type { ConsentRule, NetAuthOptions, RegisteredClient } from '../../lib/index.js';
import { CIBA, CLIENTS, ISSUER, POLICY, basic, createTestGateway, type TestGateway } from './gateway.js';
import { CALLBACK, LOCATION, SIM_SWAP } from './frontend.js';
import { CAMARA_KEY, signJwt, type ClientKeyPair } from './client-jwts.js';

/**
 * The fixture of the grants beyond the seed's two (issue 15): clients registered for refresh tokens, client
 * credentials and the JWT bearer grant, and a policy with a scope that processes no personal data and one whose
 * tokens are short and single use (Number Verification).
 */

export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Number Verification: legitimate interest, tokens of at most 300 s, one API call each. */
export const NUMBER_VERIFICATION = 'dpv:FraudPreventionAndDetection#number-verification';
/** Processes no personal data: client credentials may be used. */
export const POPULATION = 'dpv:RequestedServiceProvision#population-density';

export const GRANTS_POLICY: ConsentRule[] = [
  ...POLICY,
  {
    purpose: 'FraudPreventionAndDetection',
    scope: 'number-verification',
    basis: 'legitimate-interest',
    accessTokenLifetime: 300,
    singleUseAccessToken: true,
  },
  {
    purpose: 'RequestedServiceProvision',
    scope: 'population-density',
    basis: 'legitimate-interest',
    personalData: false,
  },
  { purpose: 'Marketing', scope: 'population-density', basis: 'forbidden', personalData: false },
];

/** Code and CIBA with refresh tokens. */
export const OFFLINE_CLIENT: RegisteredClient = {
  clientId: 'offline-app',
  clientSecret: 'offline-secret',
  redirectUris: [CALLBACK],
  grantTypes: ['authorization_code', CIBA, 'refresh_token'],
  scopes: [SIM_SWAP, LOCATION, NUMBER_VERIFICATION, POPULATION],
};
export const OFFLINE_AUTH = basic('offline-app', 'offline-secret');

/** Client credentials only. */
export const SERVICE_CLIENT: RegisteredClient = {
  clientId: 'service-app',
  clientSecret: 'service-secret',
  grantTypes: ['client_credentials'],
  scopes: [POPULATION, SIM_SWAP, 'dpv:Marketing#population-density'],
};
export const SERVICE_AUTH = basic('service-app', 'service-secret');

/** A backend that knows its subscribers' numbers: the JWT bearer grant, private_key_jwt, the CAMARA way. */
export const BEARER_CLIENT: RegisteredClient = {
  clientId: 'backend-app',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk] },
  grantTypes: [JWT_BEARER],
  scopes: [SIM_SWAP, LOCATION, NUMBER_VERIFICATION, 'dpv:Marketing#device-location', POPULATION],
};

export const GRANTS_CLIENTS: RegisteredClient[] = [...CLIENTS, OFFLINE_CLIENT, SERVICE_CLIENT, BEARER_CLIENT];

/**
 * The test gateway with the grants fixture, and two more service APIs: /number-verification (single-use tokens)
 * and /population, which accepts tokens without a subscriber (`subscriber: 'optional'`), beside /sim-swap/check,
 * which needs one (the default).
 */
export function createGrantsGateway(overrides: Partial<NetAuthOptions> = {}): TestGateway {
  const gw = createTestGateway({ clients: GRANTS_CLIENTS, consentPolicy: GRANTS_POLICY, ...overrides });
  gw.app.post('/number-verification/verify', gw.netauth.guard({ scope: 'number-verification' }), (req, res) => {
    res.json({ verified: true, subscriber: req.netauth?.subscriber.id });
  });
  gw.app.get('/population', gw.netauth.guard({ scope: 'population-density', subscriber: 'optional' }), (req, res) => {
    const grant = res.locals.netauth;
    res.json({
      clientId: grant.clientId,
      subscriber: grant.subscriber?.id ?? null,
      onRequest: req.netauth?.subscriber.id ?? null,
    });
  });
  gw.app.get('/population/per-subscriber', gw.netauth.guard({ scope: 'population-density' }), (req, res) => {
    res.json({ subscriber: req.netauth?.subscriber.id });
  });
  return gw;
}

export function tokenRequest(app: Express, body: Record<string, string>, authorization?: string): request.Test {
  const req = request(app).post('/apigateway/token').type('form');
  if (authorization !== undefined) req.set('Authorization', authorization);
  return req.send(body);
}

export function refresh(
  app: Express,
  refreshToken: string,
  extra: Record<string, string> = {},
  authorization: string = OFFLINE_AUTH,
): request.Test {
  return tokenRequest(app, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra }, authorization);
}

/** A service API of the fixture, with a bearer token: POST /sim-swap/check and /number-verification/verify, GET /population… */
export function callService(app: Express, token: string, path = '/sim-swap/check'): request.Test {
  return (path.startsWith('/population') ? request(app).get(path) : request(app).post(path)).set(
    'Authorization',
    `Bearer ${token}`,
  );
}

export interface AssertionOptions {
  /** Seconds since the epoch, the gateway's clock. */
  now: number;
  key?: ClientKeyPair;
  /** Claims to add, replace, or (with `undefined`) drop. */
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
}

/** A JWT bearer grant assertion (RFC 7523 §2.1, CAMARA): iss = the client, sub = the subscriber, the token endpoint as aud, 60 s, a fresh jti. */
export function bearerAssertion(sub: string, scope: string, options: AssertionOptions): Promise<string> {
  return signJwt(
    {
      iss: BEARER_CLIENT.clientId,
      sub,
      aud: `${ISSUER}/token`,
      iat: options.now,
      exp: options.now + 60,
      jti: randomUUID(),
      scope,
      ...options.claims,
    },
    options.key ?? CAMARA_KEY,
    options.header,
  );
}
