/**
 * The keys a DPoP proof may carry in its `jwk` header (issue 32, RFC 9449 §11.6): RSA of 2,048 to 4,096 bits with
 * the exponent 65537, EC on P-256, P-384 or P-521, or OKP (Ed25519, Ed448). The proof brings its own key, so
 * without this bound a client could make every verification expensive (a long modulus with a long exponent).
 * Checked before any signature is verified.
 */

const MIN_RSA_BITS = 2048;
const MAX_RSA_BITS = 4096;
/** 65537, base64url: the only RSA public exponent accepted. */
const RSA_EXPONENT = 'AQAB';
const EC_CURVES: ReadonlySet<unknown> = new Set(['P-256', 'P-384', 'P-521']);
const OKP_CURVES: ReadonlySet<unknown> = new Set(['Ed25519', 'Ed448']);
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Bits of a big-endian unsigned integer in base64url, leading zero bytes ignored; undefined when not base64url. */
function bitLength(value: string): number | undefined {
  if (!BASE64URL.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  let first = 0;
  while (first < bytes.length && bytes[first] === 0) first += 1;
  if (first === bytes.length) return 0;
  return (bytes.length - first - 1) * 8 + (32 - Math.clz32(bytes[first]!));
}

/** Why the proof's `jwk` is not a key the gateway verifies with, or undefined when it is. Never quotes the key. */
export function proofKeyRefusal(jwk: Record<string, unknown>): string | undefined {
  switch (jwk.kty) {
    case 'RSA': {
      const bits = typeof jwk.n === 'string' ? bitLength(jwk.n) : undefined;
      if (bits === undefined || bits < MIN_RSA_BITS || bits > MAX_RSA_BITS) {
        return `its jwk is not an RSA key of ${MIN_RSA_BITS} to ${MAX_RSA_BITS} bits`;
      }
      return jwk.e === RSA_EXPONENT ? undefined : 'its jwk is an RSA key with an exponent other than 65537';
    }
    case 'EC':
      return EC_CURVES.has(jwk.crv) ? undefined : 'its jwk is not an EC key on P-256, P-384 or P-521';
    case 'OKP':
      return OKP_CURVES.has(jwk.crv) ? undefined : 'its jwk is not an OKP key on Ed25519 or Ed448';
    default:
      return 'its jwk is not an RSA, EC or OKP key';
  }
}
