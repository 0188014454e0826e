/**
 * The signature's own cost, measured in the server process that signs (issue 46): how much of an ID-token row's
 * CPU per flow is one RS256 or ES256 signature, made the way that server makes it. An RSA-2048 signature costs
 * 2-3x more on one host than on another of the same Node and OpenSSL, so a like-for-like ratio is also given
 * without it: the work that is each side's own.
 */
import { createPrivateKey, sign, webcrypto, type JsonWebKey } from 'node:crypto';

/** About an ID token's JWS signing input (header and claims, base64url): what each side signs per flow. */
const INPUT = Buffer.alloc(420, 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImJlbmNoIn0.');

/** Server CPU (every thread, as the table's `srv us/op`) per call of `once`, over `count` calls after a warm-up. */
async function cpuPerCall(once: () => unknown, count = 300): Promise<number> {
  for (let i = 0; i < 30; i++) await once();
  const start = process.cpuUsage();
  for (let i = 0; i < count; i++) await once();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / count;
}

/** express-netauth's way: node:crypto's sign with a KeyObject made once (lib/gateway/tokens/jws.ts). */
export function nodeCryptoSignature(jwk: JsonWebKey, alg: 'RS256' | 'ES256'): () => Promise<number> {
  const key = createPrivateKey({ key: jwk, format: 'jwk' });
  const options = alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' as const } : key;
  return () => cpuPerCall(() => sign('sha256', INPUT, options));
}

/** node-oidc-provider's way: jose 6 signs through WebCrypto (`crypto.subtle.sign`, run on libuv's thread pool). */
export function webCryptoSignature(jwk: JsonWebKey, alg: 'RS256' | 'ES256'): () => Promise<number> {
  const algorithm =
    alg === 'ES256'
      ? { import: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' } }
      : { import: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, sign: { name: 'RSASSA-PKCS1-v1_5' } };
  const key = webcrypto.subtle.importKey('jwk', jwk, algorithm.import, false, ['sign']);
  return async () => {
    const k = await key;
    return cpuPerCall(() => webcrypto.subtle.sign(algorithm.sign, k, INPUT));
  };
}
