import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { SignJWT, importJWK, type JWK, type JWTPayload } from 'jose';
import type { RegisteredClient } from '../../lib/index.js';
import { ISSUER, SIM_SWAP } from './gateway.js';
import { CALLBACK } from './frontend.js';

/** The CAMARA profile's side of the fixture: clients that authenticate with private_key_jwt and sign requests. */

export interface ClientKeyPair {
  /** The private JWK the application signs with (with `kid` and `alg`). */
  privateJwk: JWK;
  /** The public JWK the developer portal registers. */
  publicJwk: JWK;
  alg: string;
}

function pair(type: 'rsa' | 'ec' | 'ed25519', kid: string, alg: string, namedCurve?: string): ClientKeyPair {
  const { privateKey, publicKey } =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : type === 'ec'
        ? generateKeyPairSync('ec', { namedCurve: namedCurve ?? 'P-256' })
        : generateKeyPairSync('ed25519');
  return {
    privateJwk: { ...(privateKey.export({ format: 'jwk' }) as JWK), kid, alg },
    publicJwk: { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, alg },
    alg,
  };
}

export const rsaPair = (kid = `rsa-${randomUUID()}`, alg = 'RS256'): ClientKeyPair => pair('rsa', kid, alg);
export const ecPair = (kid = `ec-${randomUUID()}`, alg = 'ES256'): ClientKeyPair =>
  pair('ec', kid, alg, alg === 'ES384' ? 'P-384' : 'P-256');
export const edPair = (kid = `ed-${randomUUID()}`): ClientKeyPair => pair('ed25519', kid, 'EdDSA');

/** Generated once per test file. */
export const CAMARA_KEY = rsaPair('camara-rsa');
export const CAMARA_EC_KEY = ecPair('camara-ec');
/** Same kid and type as CAMARA_KEY, another key: what an attacker without the client's key can sign with. */
export const FOREIGN_CAMARA_KEY = rsaPair('camara-rsa');

/** An aggregator registered the CAMARA way: private_key_jwt, inline public keys, both grants. */
export const CAMARA_CLIENT: RegisteredClient = {
  clientId: 'aggregator',
  name: 'Aggregator',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk, CAMARA_EC_KEY.publicJwk] },
  redirectUris: [CALLBACK],
  grantTypes: ['urn:openid:params:grant-type:ciba', 'authorization_code'],
  scopes: [SIM_SWAP, 'dpv:FraudPreventionAndDetection#device-location'],
};

/** The same, but every authorization request must be a signed request object. */
export const SIGNED_ONLY_CLIENT: RegisteredClient = {
  ...CAMARA_CLIENT,
  clientId: 'signed-only',
  requireSignedRequestObject: true,
};

export interface SignOptions {
  /** Seconds since the epoch, the gateway's clock. */
  now: number;
  key?: ClientKeyPair;
  clientId?: string;
  /** Claims to add, replace, or (with `undefined`) drop. */
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
}

/** Signs a JWT with jose, as a client library would. */
export async function signJwt(
  payload: Record<string, unknown>,
  key: ClientKeyPair,
  header: Record<string, unknown> = {},
): Promise<string> {
  const claims = Object.fromEntries(Object.entries(payload).filter(([, v]) => v !== undefined)) as JWTPayload;
  const { alg: _tagged, ...jwk } = key.privateJwk;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.privateJwk.kid, ...header })
    .sign(await importJWK(jwk, key.alg));
}

/** An RFC 7523 client assertion: iss = sub = client_id, aud = the issuer, 60 s, a fresh jti. */
export function clientAssertion(options: SignOptions): Promise<string> {
  const clientId = options.clientId ?? CAMARA_CLIENT.clientId;
  return signJwt(
    {
      iss: clientId,
      sub: clientId,
      aud: ISSUER,
      iat: options.now,
      exp: options.now + 60,
      jti: randomUUID(),
      ...options.claims,
    },
    options.key ?? CAMARA_KEY,
    options.header,
  );
}

/** An RFC 9101 request object: the parameters, iss = client_id, aud = the issuer, iat, exp, jti. */
export function requestObject(parameters: Record<string, string>, options: SignOptions): Promise<string> {
  const clientId = options.clientId ?? CAMARA_CLIENT.clientId;
  return signJwt(
    {
      client_id: clientId,
      ...parameters,
      iss: clientId,
      aud: ISSUER,
      iat: options.now,
      exp: options.now + 60,
      jti: randomUUID(),
      ...options.claims,
    },
    options.key ?? CAMARA_KEY,
    { typ: 'oauth-authz-req+jwt', ...options.header },
  );
}

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** The form fields of private_key_jwt authentication. */
export function assertionFields(assertion: string, clientId: string = CAMARA_CLIENT.clientId): Record<string, string> {
  return { client_id: clientId, client_assertion_type: ASSERTION_TYPE, client_assertion: assertion };
}
