import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';

/**
 * JWS algorithms a client may sign its client assertions and request objects with (the CAMARA profile's
 * asymmetric set). `none` and the HMAC algorithms are never accepted: a JWS must prove the client's private key.
 */
export type ClientSigningAlgorithm = 'RS256' | 'PS256' | 'ES256' | 'ES384' | 'EdDSA';
export const CLIENT_SIGNING_ALGORITHMS: readonly ClientSigningAlgorithm[] = [
  'RS256',
  'PS256',
  'ES256',
  'ES384',
  'EdDSA',
];

export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A client's key registration: what `RegisteredClient` carries for private_key_jwt and signed requests. */
export interface ClientKeyRegistration {
  readonly jwks?: { readonly keys: readonly Readonly<JWK>[] } | undefined;
  readonly jwksUri?: string | undefined;
  readonly signingAlgorithms?: readonly ClientSigningAlgorithm[] | undefined;
}

/** JWK members that only a private (or symmetric) key has. */
export const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'] as const;

/** The algorithms a public key can verify, by its type and curve. */
function algorithmsOf(jwk: JWK): readonly ClientSigningAlgorithm[] {
  if (jwk.kty === 'RSA') return ['RS256', 'PS256'];
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return ['ES256'];
  if (jwk.kty === 'EC' && jwk.crv === 'P-384') return ['ES384'];
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return ['EdDSA'];
  return [];
}

function checkKey(jwk: unknown, where: string, allowed: readonly ClientSigningAlgorithm[]): void {
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
    throw new TypeError(`${where} is not a JWK object`);
  const key = jwk as JWK;
  const secret = PRIVATE_MEMBERS.find((m) => m in key);
  if (secret !== undefined) {
    throw new TypeError(
      `${where} holds private key material ("${secret}"): register only the client's PUBLIC key (drop ${PRIVATE_MEMBERS.join(', ')})`,
    );
  }
  const fits = algorithmsOf(key);
  if (fits.length === 0) {
    throw new TypeError(
      `${where}: unsupported key (kty ${String(key.kty)}${key.crv ? `, crv ${key.crv}` : ''}); use RSA, EC P-256, EC P-384 or OKP Ed25519`,
    );
  }
  if (key.use !== undefined && key.use !== 'sig') throw new TypeError(`${where}: use must be "sig"`);
  if (key.key_ops !== undefined && !(Array.isArray(key.key_ops) && key.key_ops.includes('verify'))) {
    throw new TypeError(`${where}: key_ops must include "verify"`);
  }
  if (key.alg !== undefined && !fits.includes(key.alg as ClientSigningAlgorithm)) {
    throw new TypeError(
      `${where}: alg ${key.alg} does not fit a ${key.kty} key or is not accepted (use one of ${fits.join(', ')})`,
    );
  }
  const usable = key.alg === undefined ? fits : [key.alg as ClientSigningAlgorithm];
  if (!usable.some((alg) => allowed.includes(alg))) {
    throw new TypeError(
      `${where}: the key signs ${usable.join('/')}, which signingAlgorithms does not allow; add it or register another key`,
    );
  }
  let parsed: KeyObject;
  try {
    parsed = createPublicKey({ key: key as JsonWebKey, format: 'jwk' });
  } catch {
    throw new TypeError(`${where} is not a valid public JWK`);
  }
  if (key.kty === 'RSA' && (parsed.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw new TypeError(`${where}: RSA keys must have at least 2048 bits`);
  }
}

function checkJwksUri(clientId: string, uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new TypeError(`client ${clientId}: jwksUri "${uri}" is not an absolute URL`);
  }
  // Which origins may use http: is the destination policy's (jwks-destination.ts): those listed in
  // clientJwks.internalOrigins, on loopback or not. Every registration passes it before the gateway uses it.
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(
      `client ${clientId}: jwksUri "${uri}" must use https: ` +
        '(http: only for an origin listed in clientJwks.internalOrigins)',
    );
  }
  if (url.username !== '' || url.password !== '')
    throw new TypeError(`client ${clientId}: jwksUri must not carry credentials`);
}

/**
 * Start-up checks of a client's keys (StaticClientRegistry): public keys only, of a supported type, that one
 * of the client's algorithms can use; `jwks` or `jwksUri`, not both; a `jwksUri` over TLS; known algorithms.
 */
export function checkClientKeys(clientId: string, registration: ClientKeyRegistration): void {
  const { jwks, jwksUri, signingAlgorithms } = registration;
  if (signingAlgorithms !== undefined) {
    if (!Array.isArray(signingAlgorithms) || signingAlgorithms.length === 0) {
      throw new TypeError(
        `client ${clientId}: signingAlgorithms must list at least one of ${CLIENT_SIGNING_ALGORITHMS.join(', ')}`,
      );
    }
    for (const alg of signingAlgorithms) {
      if (!CLIENT_SIGNING_ALGORITHMS.includes(alg)) {
        throw new TypeError(
          `client ${clientId}: signingAlgorithms: "${String(alg)}" is refused; use ${CLIENT_SIGNING_ALGORITHMS.join(', ')} (none and HS* never verify a client's key)`,
        );
      }
    }
  }
  if (jwks !== undefined && jwksUri !== undefined)
    throw new TypeError(`client ${clientId}: give jwks or jwksUri, not both`);
  if (jwksUri !== undefined) checkJwksUri(clientId, jwksUri);
  if (jwks !== undefined) {
    if (jwks === null || typeof jwks !== 'object' || !Array.isArray(jwks.keys) || jwks.keys.length === 0) {
      throw new TypeError(
        `client ${clientId}: jwks must be a JWK Set with at least one key: { keys: [ ...public JWKs ] }`,
      );
    }
    const allowed = signingAlgorithms ?? CLIENT_SIGNING_ALGORITHMS;
    jwks.keys.forEach((key, i) => {
      checkKey(key, `client ${clientId}: jwks.keys[${i}]`, allowed);
    });
  }
}
