import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CompactSign, SignJWT, compactVerify, createLocalJWKSet, jwtVerify, type JWK } from 'jose';
import { signJws, verifyJws } from '../../../lib/gateway/tokens/jws.js';
import { resolveKeySet, type KeySet } from '../../../lib/gateway/tokens/keys.js';

const jwkOf = (type: 'rsa' | 'ec' | 'ed25519', namedCurve?: string): JWK => {
  const { privateKey } =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : type === 'ec'
        ? generateKeyPairSync('ec', { namedCurve: namedCurve! })
        : generateKeyPairSync('ed25519');
  return privateKey.export({ format: 'jwk' }) as JWK;
};

// One key per type: RSA key generation is the slow part, and RS*/PS* share the key material.
const RSA = jwkOf('rsa');
const ED25519 = jwkOf('ed25519');
const CASES: Array<[alg: string, jwk: JWK]> = [
  ['RS256', RSA],
  ['RS384', RSA],
  ['RS512', RSA],
  ['PS256', RSA],
  ['PS384', RSA],
  ['PS512', RSA],
  ['ES256', jwkOf('ec', 'P-256')],
  ['ES384', jwkOf('ec', 'P-384')],
  ['ES512', jwkOf('ec', 'P-521')],
  ['EdDSA', ED25519],
  ['Ed25519', ED25519],
];

const keySet = (...jwks: JWK[]): KeySet => resolveKeySet(jwks, true)!;

// Non-ASCII text, nested members, an array and numbers: what JSON.stringify and UTF-8 must agree on.
const CLAIMS = {
  iss: 'https://gateway.example/apigateway',
  sub: 'sub-ñandú-😀',
  aud: 'app-1',
  exp: 1_800_003_600,
  iat: 1_800_000_000,
  amr: ['hwk'],
  cnf: { jkt: 'abc_DEF-123' },
  'urn:openid:params:jwt:claim:auth_req_id': 'x.y',
  ratio: 0.5,
};

describe("signJws: the package's own signatures through node:crypto", () => {
  it.each(CASES)('%s: what jose writes for the same input, and jose verifies it', async (alg, jwk) => {
    const keys = keySet({ ...jwk, alg, kid: `k-${alg}` });
    const key = keys.active;
    for (const typ of ['JWT', 'at+jwt']) {
      const ours = signJws(key, typ, CLAIMS);
      const theirs = await new SignJWT(CLAIMS).setProtectedHeader({ alg, kid: key.kid, typ }).sign(key.privateKey);
      // Header and payload byte for byte (ECDSA and RSA-PSS signatures are randomized, so those differ).
      expect(ours.split('.').slice(0, 2)).toEqual(theirs.split('.').slice(0, 2));
      if (alg.startsWith('RS') || alg.startsWith('Ed')) expect(ours).toBe(theirs);
      const verified = await jwtVerify(ours, createLocalJWKSet(keys.jwks), { typ, algorithms: [alg] });
      expect(verified.protectedHeader).toEqual({ alg, kid: key.kid, typ });
      expect(verified.payload).toEqual(CLAIMS);
      // And the verifier here takes jose's output.
      expect(verifyJws(keys.keys, theirs)).toEqual({ header: { alg, kid: key.kid, typ }, claims: CLAIMS, key });
    }
  });

  it('refuses, as SignJWT does, a time claim that is not a finite number', async () => {
    const key = keySet({ ...RSA, kid: 'k' }).active;
    for (const claim of ['iat', 'nbf', 'exp']) {
      expect(() => signJws(key, 'JWT', { [claim]: Number.NaN })).toThrow(TypeError);
      const jose = new SignJWT({ [claim]: Number.NaN }).setProtectedHeader({ alg: 'RS256' });
      await expect(jose.sign(key.privateKey)).rejects.toThrow(TypeError);
    }
  });
});

describe("verifyJws: accepts exactly what jose's jwtVerify accepts with the same keys", () => {
  const ec = jwkOf('ec', 'P-256');
  const keys = keySet({ ...ec, kid: 'ec-1' }, { ...RSA, kid: 'rsa-1', alg: 'PS256' });
  const [ecKey, rsaKey] = keys.keys as [KeySet['active'], KeySet['active']];
  const b64 = (text: string) => Buffer.from(text).toString('base64url');
  const payload = b64(JSON.stringify(CLAIMS));
  const genuine = signJws(ecKey, 'JWT', CLAIMS);
  const [h, p, s] = genuine.split('.') as [string, string, string];
  const bytes = (text: string) => new TextEncoder().encode(text);
  /** Signed by jose with any header (its extension check told that `exp` is understood, so it signs it). */
  const withHeader = (header: object, key: KeyObject | Uint8Array = ecKey.privateKey) =>
    new CompactSign(bytes(JSON.stringify(CLAIMS)))
      .setProtectedHeader(header as { alg: string })
      .sign(key, { crit: { b64: true, exp: true } });
  /** A header with the genuine payload and signature. */
  const unsigned = (header: object) => `${b64(JSON.stringify(header))}.${payload}.${s}`;
  const publicJwk = JSON.stringify(keys.jwks.keys[0]);
  const ecPrivate = ecKey.privateKey;
  const signature = Buffer.from(s, 'base64url');
  const flipped = Buffer.from(signature);
  flipped[5] = flipped[5]! ^ 0x01;

  const cases: Array<[name: string, token: () => Promise<string> | string, accepted: boolean]> = [
    ['genuine', () => genuine, true],
    ['no kid, one key of that alg', () => withHeader({ alg: 'ES256' }), true],
    ['crit b64: true', () => withHeader({ alg: 'ES256', kid: 'ec-1', crit: ['b64'], b64: true }), true],
    ['tampered signature', () => `${h}.${p}.${flipped.toString('base64url')}`, false],
    ['signature cut short', () => `${h}.${p}.${signature.subarray(0, 32).toString('base64url')}`, false],
    ['no signature', () => `${h}.${p}.`, false],
    ['alg none', () => `${b64(JSON.stringify({ alg: 'none', kid: 'ec-1' }))}.${payload}.`, false],
    ['alg none with the genuine signature', () => unsigned({ alg: 'none', kid: 'ec-1' }), false],
    ["alg of another key, that key's kid", () => withHeader({ alg: 'ES256', kid: 'rsa-1' }), false],
    ['RS256 header on the PS256 key', () => withHeader({ alg: 'RS256', kid: 'rsa-1' }, rsaKey.privateKey), false],
    ['HS256, the public JWK as secret', () => withHeader({ alg: 'HS256', kid: 'ec-1' }, bytes(publicJwk)), false],
    ['unknown kid', () => withHeader({ alg: 'ES256', kid: 'ec-2' }), false],
    ['kid not a string', () => withHeader({ alg: 'ES256', kid: 1 }), false],
    ['crit names an unknown extension', () => withHeader({ alg: 'ES256', kid: 'ec-1', crit: ['exp'], exp: 1 }), false],
    ['crit b64: false', () => unsigned({ alg: 'ES256', kid: 'ec-1', crit: ['b64'], b64: false }), false],
    ['header not JSON', () => `${b64('{alg:ES256}')}.${p}.${s}`, false],
    ['header an array', () => `${b64('["ES256"]')}.${p}.${s}`, false],
    ['four segments', () => `${genuine}.${s}`, false],
    ['a padded segment', () => `${h}=.${p}.${s}`, false],
    ['payload not base64url', () => `${h}.${p}*.${s}`, false],
  ];

  it.each(cases)('%s', async (_name, make, accepted) => {
    const token = await make();
    const jose = await jwtVerify(token, createLocalJWKSet(keys.jwks)).then(
      () => true,
      () => false,
    );
    expect(jose).toBe(accepted);
    expect(verifyJws(keys.keys, token) !== undefined).toBe(accepted);
  });

  it('a payload that is not a JSON object, or not UTF-8, fails after a valid signature', async () => {
    for (const content of [bytes('[1,2]'), bytes('"text"'), Uint8Array.from([0x7b, 0xff, 0x7d])]) {
      const token = await new CompactSign(content).setProtectedHeader({ alg: 'ES256', kid: 'ec-1' }).sign(ecPrivate);
      await expect(compactVerify(token, createLocalJWKSet(keys.jwks))).resolves.toBeDefined();
      await expect(jwtVerify(token, createLocalJWKSet(keys.jwks))).rejects.toThrow();
      expect(verifyJws(keys.keys, token)).toBeUndefined();
    }
  });

  it('two keys of one algorithm: a token without kid names neither', async () => {
    const two = keySet({ ...ec, kid: 'ec-1' }, { ...jwkOf('ec', 'P-256'), kid: 'ec-2' });
    const unnamed = await withHeader({ alg: 'ES256', typ: 'JWT' }, two.active.privateKey);
    await expect(jwtVerify(unnamed, createLocalJWKSet(two.jwks))).rejects.toThrow();
    expect(verifyJws(two.keys, unnamed)).toBeUndefined();
    // With its kid, the same key's token verifies.
    expect(verifyJws(two.keys, signJws(two.active, 'JWT', CLAIMS))?.claims).toEqual(CLAIMS);
  });
});
