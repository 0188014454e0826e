import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import { APP1, CIBA, ISSUER, SIM_SWAP, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { startBackchannel } from '../../helpers/requests.js';
import { handProof, proofKey, type ProofKey } from '../../helpers/dpop.js';

/**
 * Issue 32, finding 8: a DPoP proof brings its own key, so its key is bounded before any signature is verified
 * (RSA 2,048-4,096 bits with e = 65537, or EC / OKP). A 3,072-bit modulus with a ~3,000-bit exponent fits a 2 KB
 * proof and costs over a hundred times an ordinary verification.
 */

const TOKEN_URL = `${ISSUER}/token`;
const API_URL = 'http://gateway.test/sim-swap/check';

const toBig = (value: string): bigint => BigInt(`0x${Buffer.from(value, 'base64url').toString('hex') || '0'}`);
const toB64 = (value: bigint): string => {
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex').toString('base64url');
};
const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));
function inverse(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [a % m, m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1, s0, s1] = [r1, r0 - q * r1, s1, s0 - q * s1];
  }
  return ((s0 % m) + m) % m;
}

/** A valid RSA key pair of 3,072 bits whose public exponent has about 3,000 bits (the review's proof key). */
async function hugeExponentKey(): Promise<ProofKey> {
  const jwk = generateKeyPairSync('rsa', { modulusLength: 3072 }).privateKey.export({ format: 'jwk' }) as Record<
    string,
    string
  >;
  const p = toBig(jwk.p!);
  const q = toBig(jwk.q!);
  const lambda = ((p - 1n) * (q - 1n)) / gcd(p - 1n, q - 1n);
  let e: bigint;
  do e = (toBig(randomBytes(375).toString('base64url')) | (1n << 2999n) | 1n) % lambda;
  while (gcd(e, lambda) !== 1n || e < 1n << 2900n);
  const d = inverse(e, lambda);
  const publicJwk: JWK = { kty: 'RSA', n: jwk.n!, e: toB64(e) };
  const privateJwk = {
    ...publicJwk,
    d: toB64(d),
    p: jwk.p!,
    q: jwk.q!,
    dp: toB64(d % (p - 1n)),
    dq: toB64(d % (q - 1n)),
    qi: jwk.qi!,
  };
  return { privateKey: (await importJWK(privateJwk, 'RS256')) as CryptoKey, publicJwk, alg: 'RS256' };
}

function tokenRequest(gw: TestGateway, authReqId: string, proof: string) {
  return request(gw.app)
    .post('/apigateway/token')
    .set('Authorization', APP1)
    .set('DPoP', proof)
    .type('form')
    .send({ grant_type: CIBA, auth_req_id: authReqId });
}

const now = (gw: TestGateway): number => Math.floor(gw.clock.now / 1000);

describe('DPoP proof keys are bounded before their signature is verified', () => {
  let huge: ProofKey;
  let small: ProofKey;
  beforeAll(async () => {
    huge = await hugeExponentKey();
    const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' }) as JWK;
    // Only the header's key matters: the refusal comes before any signature check.
    small = { ...(await proofKey('ES256')), publicJwk: rsa1024 };
  }, 60_000);

  it('a 3,072-bit key with a huge exponent at /token: 400 invalid_dpop_proof, the auth_req_id not used up', async () => {
    const gw = createTestGateway();
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
    const res = await tokenRequest(gw, id, await handProof({ key: huge, htm: 'POST', htu: TOKEN_URL, iat: now(gw) }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'invalid_dpop_proof',
      error_description: 'the DPoP proof was refused: its jwk is an RSA key with an exponent other than 65537',
    });
    const retry = await tokenRequest(
      gw,
      id,
      await handProof({ key: await proofKey('ES256'), htm: 'POST', htu: TOKEN_URL, iat: now(gw) }),
    );
    expect(retry.body.token_type).toBe('DPoP');
  });

  it('an RSA key under 2,048 bits, an EC key on another curve, another kty: 400 invalid_dpop_proof', async () => {
    const gw = createTestGateway();
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
    const es = await proofKey('ES256');
    const cases: Array<[ProofKey, string]> = [
      [small, 'its jwk is not an RSA key of 2048 to 4096 bits'],
      [
        { ...es, publicJwk: { ...es.publicJwk, crv: 'secp256k1' } },
        'its jwk is not an EC key on P-256, P-384 or P-521',
      ],
      [{ ...es, publicJwk: { kty: 'oct' } }, 'its jwk is not an RSA, EC or OKP key'],
    ];
    for (const [key, reason] of cases) {
      const res = await tokenRequest(gw, id, await handProof({ key, htm: 'POST', htu: TOKEN_URL, iat: now(gw) }));
      expect(res.status).toBe(400);
      expect(res.body.error_description).toBe(`the DPoP proof was refused: ${reason}`);
    }
  });

  it('RSA 2,048 with e = 65537, EC P-256 and Ed25519 keys bind tokens', async () => {
    const gw = createTestGateway();
    for (const alg of ['RS256', 'ES256', 'EdDSA']) {
      const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
      const res = await tokenRequest(
        gw,
        id,
        await handProof({ key: await proofKey(alg), htm: 'POST', htu: TOKEN_URL, iat: now(gw) }),
      );
      expect(res.status, alg).toBe(200);
      expect(res.body.token_type).toBe('DPoP');
    }
  });

  it('at the guard: a proof with the huge-exponent key is 401 invalid_dpop_proof, refused for its key', async () => {
    const gw = createTestGateway();
    const bound = await proofKey('ES256');
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
    const token = (
      await tokenRequest(gw, id, await handProof({ key: bound, htm: 'POST', htu: TOKEN_URL, iat: now(gw) }))
    ).body.access_token as string;
    const res = await request(gw.app)
      .post('/sim-swap/check')
      .set('Authorization', `DPoP ${token}`)
      .set('DPoP', await handProof({ key: huge, htm: 'POST', htu: API_URL, iat: now(gw), accessToken: token }));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_dpop_proof"');
    expect(res.headers['www-authenticate']).toContain('its jwk is an RSA key with an exponent other than 65537');
    const right = await request(gw.app)
      .post('/sim-swap/check')
      .set('Authorization', `DPoP ${token}`)
      .set('DPoP', await handProof({ key: bound, htm: 'POST', htu: API_URL, iat: now(gw), accessToken: token }));
    expect(right.status).toBe(200);
  });
});
