import { constants, sign, verify, type KeyObject } from 'node:crypto';

/**
 * Compact JWS (RFC 7515) with the package's own keys, through node:crypto: ID tokens and JWT access tokens are
 * signed here, and the guard verifies its own access tokens here. Nothing that comes from outside (client
 * assertions, request objects, DPoP proofs) is verified here: that stays with jose. What this writes is what
 * jose's SignJWT writes for the same header and claims, and what it accepts is what jose's jwtVerify accepts
 * with a local key set of the same keys (the tests hold it to both).
 */

/** One of the package's own keys, as node:crypto key objects made once when the key set is resolved. */
export interface JwsKey {
  kid: string;
  /** A JWS algorithm that fits the key (keys.ts checks it). */
  alg: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** How node:crypto computes one JWS algorithm (RFC 7518 §3.3-3.5, RFC 8037 §3.1). */
interface Scheme {
  /** Null for EdDSA: Ed25519 hashes inside the algorithm. */
  digest: 'sha256' | 'sha384' | 'sha512' | null;
  padding?: number;
  saltLength?: number;
  /** JWS carries ECDSA signatures as R || S (RFC 7518 §3.4), not DER. */
  dsaEncoding?: 'ieee-p1363';
}

const pkcs1 = (digest: Scheme['digest']): Scheme => ({ digest, padding: constants.RSA_PKCS1_PADDING });
// RSASSA-PSS with the salt as long as the digest (RFC 7518 §3.5), checked at that length on verification.
const pss = (digest: Scheme['digest'], saltLength: number): Scheme => ({
  digest,
  padding: constants.RSA_PKCS1_PSS_PADDING,
  saltLength,
});
const ecdsa = (digest: Scheme['digest']): Scheme => ({ digest, dsaEncoding: 'ieee-p1363' });

const SCHEMES: ReadonlyMap<string, Scheme> = new Map([
  ['RS256', pkcs1('sha256')],
  ['RS384', pkcs1('sha384')],
  ['RS512', pkcs1('sha512')],
  ['PS256', pss('sha256', 32)],
  ['PS384', pss('sha384', 48)],
  ['PS512', pss('sha512', 64)],
  ['ES256', ecdsa('sha256')],
  ['ES384', ecdsa('sha384')],
  ['ES512', ecdsa('sha512')],
  ['EdDSA', { digest: null }],
  ['Ed25519', { digest: null }],
]);

function schemeOf(alg: string): Scheme {
  const scheme = SCHEMES.get(alg);
  if (!scheme) throw new TypeError(`unsupported JWS algorithm ${alg}`);
  return scheme;
}

const base64url = (json: string): string => Buffer.from(json, 'utf8').toString('base64url');

/**
 * A compact JWS of `claims` with the header `{alg, kid, typ}`, in that member order, as jose's SignJWT writes it.
 * Like SignJWT, an `iat`, `nbf` or `exp` that is not a finite number is a programming error, not a claim.
 */
export function signJws(key: JwsKey, typ: string, claims: Readonly<Record<string, unknown>>): string {
  for (const claim of ['iat', 'nbf', 'exp']) {
    const value = claims[claim];
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new TypeError(`"${claim}" claim must be a finite number`);
    }
  }
  const scheme = schemeOf(key.alg);
  const header = JSON.stringify({ alg: key.alg, kid: key.kid, typ });
  const input = `${base64url(header)}.${base64url(JSON.stringify(claims))}`;
  const signature = sign(scheme.digest, Buffer.from(input, 'latin1'), { key: key.privateKey, ...scheme });
  return `${input}.${signature.toString('base64url')}`;
}

export type JsonObject = Record<string, unknown>;

/** A verified JWS: its protected header and its claims, both JSON objects, and the key that verified it. */
export interface VerifiedJws {
  header: JsonObject;
  claims: JsonObject;
  key: JwsKey;
}

const SEGMENT = /^[A-Za-z0-9_-]*$/;
// Strict UTF-8 as jose decodes (a malformed sequence fails the token rather than turning into U+FFFD).
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A base64url segment (unpadded) as bytes; undefined when it cannot be one. */
function bytesOf(segment: string): Buffer | undefined {
  // 4n + 1 characters leave 6 bits over, less than a byte: no base64 encoding has that length.
  return segment.length % 4 !== 1 && SEGMENT.test(segment) ? Buffer.from(segment, 'base64url') : undefined;
}

/** JSON object bytes (not an array), or undefined. */
function jsonObjectOf(bytes: Buffer): JsonObject | undefined {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

/**
 * `crit` as RFC 7515 §4.1.11 has it for a JWT: absent, or naming only extensions understood here. The only one
 * is `b64` (RFC 7797), and a JWT's payload is always encoded, so it must then be `true`.
 */
function criticalUnderstood(header: JsonObject): boolean {
  const { crit } = header;
  if (crit === undefined) return true;
  return Array.isArray(crit) && crit.length > 0 && crit.every((name) => name === 'b64') && header.b64 === true;
}

/**
 * The key of `keys` a header names: its `alg` and, when the header has one, its `kid`; exactly one must fit
 * (without a `kid`, two keys of the same algorithm are ambiguous and nothing verifies).
 */
function keyFor(keys: readonly JwsKey[], alg: unknown, kid: unknown): JwsKey | undefined {
  let found: JwsKey | undefined;
  for (const key of keys) {
    if (key.alg !== alg || (kid !== undefined && kid !== key.kid)) continue;
    if (found) return undefined;
    found = key;
  }
  return found;
}

/**
 * Verifies a compact JWS signed with one of the package's own `keys`: three base64url segments, a JSON header,
 * an algorithm among the keys' (never `none`, never one the header picks for a key of another algorithm), the
 * key by `kid`, the signature, a JSON payload. Undefined for anything else. The claims' meaning (typ, iss, aud,
 * exp ...) is the caller's to check.
 */
export function verifyJws(keys: readonly JwsKey[], token: string): VerifiedJws | undefined {
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  if (first < 0 || second < 0 || token.indexOf('.', second + 1) >= 0) return undefined;
  const headerBytes = bytesOf(token.slice(0, first));
  const payloadBytes = bytesOf(token.slice(first + 1, second));
  const signature = bytesOf(token.slice(second + 1));
  if (!headerBytes || !payloadBytes || !signature) return undefined;
  const header = jsonObjectOf(headerBytes);
  if (!header || !criticalUnderstood(header)) return undefined;
  const key = keyFor(keys, header.alg, header.kid);
  if (!key) return undefined;
  const scheme = schemeOf(key.alg);
  let valid: boolean;
  try {
    // The signing input is ASCII: every segment passed the base64url alphabet above.
    const input = Buffer.from(token.slice(0, second), 'latin1');
    valid = verify(scheme.digest, input, { key: key.publicKey, ...scheme }, signature);
  } catch {
    // A signature of the wrong length for the key, say.
    return undefined;
  }
  if (!valid) return undefined;
  const claims = jsonObjectOf(payloadBytes);
  return claims ? { header, claims, key } : undefined;
}
