import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { JsonWebKey, KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { JwsKey } from './jws.js';

/**
 * One signing key, resolved: the private half signs, the public half verifies the gateway's own access tokens
 * (jws.ts, both as key objects made once here) and is published at `{issuer}/jwks`.
 */
export interface SigningKey extends JwsKey {
  /** The public JWK as published: no private members, with `kid`, `alg` and `use: "sig"`. */
  publicJwk: JWK;
}

/** The gateway's key set: the first key signs, every key verifies (rotation). */
export interface KeySet {
  active: SigningKey;
  keys: readonly SigningKey[];
  /** The public JWK Set document. */
  jwks: { keys: JWK[] };
  /** JWS algorithms of the published keys, the active one first. */
  algorithms: string[];
  /** True when the key was generated at start-up (no `signingKeys` configured). */
  generated: boolean;
}

const RSA_ALGS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']);
const EC_ALGS: Record<string, string> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };

/** RFC 7638 JWK thumbprint (SHA-256, base64url) over the key type's required public members. */
export function jwkThumbprint(jwk: JWK): string {
  let members: string[];
  if (jwk.kty === 'RSA') members = ['e', 'kty', 'n'];
  else if (jwk.kty === 'EC') members = ['crv', 'kty', 'x', 'y'];
  else if (jwk.kty === 'OKP') members = ['crv', 'kty', 'x'];
  else throw new TypeError(`unsupported key type ${String(jwk.kty)}`);
  // Members in lexicographic order, no whitespace: JSON.stringify of an object built in that order.
  const canonical = JSON.stringify(Object.fromEntries(members.map((m) => [m, jwk[m as keyof JWK]])));
  return createHash('sha256').update(canonical).digest('base64url');
}

/** The JWS algorithm of a key: its JWK `alg`, else the usual one for its type. */
function algorithmOf(jwk: JWK, where: string): string {
  const okp = jwk.kty === 'OKP' && jwk.crv === 'Ed25519' ? 'EdDSA' : undefined;
  const inferred = jwk.kty === 'RSA' ? 'RS256' : jwk.kty === 'EC' ? EC_ALGS[jwk.crv ?? ''] : okp;
  if (inferred === undefined) {
    throw new TypeError(
      `${where}: unsupported key (use RSA, EC P-256/P-384/P-521 or OKP Ed25519; symmetric keys cannot be published)`,
    );
  }
  if (jwk.alg === undefined) return inferred;
  const fits =
    jwk.kty === 'RSA'
      ? RSA_ALGS.has(jwk.alg)
      : jwk.kty === 'OKP'
        ? jwk.alg === 'EdDSA' || jwk.alg === 'Ed25519'
        : jwk.alg === inferred;
  if (!fits) throw new TypeError(`${where}: alg ${jwk.alg} does not fit a ${jwk.kty} key`);
  return jwk.alg;
}

function resolveKey(jwk: JWK, where: string): SigningKey {
  if (jwk.use !== undefined && jwk.use !== 'sig') throw new TypeError(`${where}: use must be "sig"`);
  if (jwk.d === undefined) throw new TypeError(`${where}: a private JWK is needed (the "d" member is missing)`);
  const alg = algorithmOf(jwk, where);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    throw new TypeError(`${where}: not a valid private JWK`);
  }
  if (jwk.kty === 'RSA' && (privateKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw new TypeError(`${where}: RSA keys must have at least 2048 bits`);
  }
  const publicKey = createPublicKey(privateKey);
  const exported = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = jwk.kid ?? jwkThumbprint(exported);
  return { kid, alg, privateKey, publicKey, publicJwk: { ...exported, kid, alg, use: 'sig' } };
}

/**
 * The development key, generated once per process: ID tokens are on by default, so every gateway without
 * `signingKeys` needs one, and a process holding several (tests, a demo) need not pay for RSA generation each time.
 */
let developmentKey: SigningKey | undefined;

function generatedKey(): SigningKey {
  if (developmentKey === undefined) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    developmentKey = resolveKey({ ...(privateKey.export({ format: 'jwk' }) as JWK), alg: 'RS256' }, 'generated key');
  }
  return developmentKey;
}

/**
 * Resolves `signingKeys`. Without keys: none when nothing needs signing, else a generated RS256 key (the
 * default ID token algorithm of OpenID Connect and openid-client), marked `generated` (the start-up checks warn).
 */
export function resolveKeySet(signingKeys: readonly JWK[] | undefined, needed: boolean): KeySet | undefined {
  let keys: SigningKey[];
  let generated = false;
  if (signingKeys !== undefined && signingKeys.length > 0) {
    keys = signingKeys.map((jwk, i) => resolveKey(jwk, `signingKeys[${i}]`));
    const kids = new Set(keys.map((k) => k.kid));
    if (kids.size !== keys.length) throw new TypeError('signingKeys: two keys have the same kid');
  } else if (needed) {
    keys = [generatedKey()];
    generated = true;
  } else {
    return undefined;
  }
  const jwks = { keys: keys.map((k) => k.publicJwk) };
  return {
    active: keys[0]!,
    keys,
    jwks,
    algorithms: [...new Set(keys.map((k) => k.alg))],
    generated,
  };
}

/** Hash of the `*_hash` claims (OIDC Core §3.1.3.6): the hash function of the signing algorithm. */
export function hashAlgorithmOf(alg: string): 'sha256' | 'sha384' | 'sha512' {
  if (alg.endsWith('384')) return 'sha384';
  // EdDSA with Ed25519 uses SHA-512 (OpenID Connect Core errata).
  if (alg.endsWith('512') || alg === 'EdDSA' || alg === 'Ed25519') return 'sha512';
  return 'sha256';
}
