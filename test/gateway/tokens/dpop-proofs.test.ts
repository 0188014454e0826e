import { describe, expect, it, beforeAll } from 'vitest';
import request from 'supertest';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { APP1, CIBA, ISSUER, SIM_SWAP, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { startBackchannel } from '../../helpers/requests.js';
import { handProof, proofKey, type HandProof, type ProofKey } from '../../helpers/dpop.js';

/**
 * The rules of a DPoP proof (RFC 9449 §4.3), each broken once by a proof made with jose, at the token endpoint
 * (400 invalid_dpop_proof, the auth_req_id not used up) and at the guard (401 with the DPoP challenge).
 * The gateway's clock is the fixture's, fixed: proofs are dated by it.
 */

const TOKEN_URL = `${ISSUER}/token`;

function tokenRequest(gw: TestGateway, authReqId: string, proofs: string | string[] | undefined) {
  const req = request(gw.app).post('/apigateway/token').set('Authorization', APP1).type('form');
  // superagent sends an array as one header line per value.
  if (proofs !== undefined) req.set('DPoP', proofs as string);
  return req.send({ grant_type: CIBA, auth_req_id: authReqId });
}

describe('DPoP proofs at the token endpoint', () => {
  let key: ProofKey;
  let other: ProofKey;
  beforeAll(async () => {
    key = await proofKey('ES256');
    other = await proofKey('ES256');
  });

  const now = (gw: TestGateway) => Math.floor(gw.clock.now / 1000);
  const proof = (gw: TestGateway, overrides: Partial<HandProof> = {}) =>
    handProof({ key, htm: 'POST', htu: TOKEN_URL, iat: now(gw), ...overrides });

  /** What is broken, what the description names, the proof. */
  const refusals: Array<[string, string, (gw: TestGateway) => Promise<string | string[]>]> = [
    ['typ is not dpop+jwt', 'typ', (gw) => proof(gw, { header: { typ: 'jwt' } })],
    ['no typ', 'typ', (gw) => proof(gw, { header: { typ: undefined } })],
    ['htm is another method', 'htm', (gw) => proof(gw, { htm: 'GET' })],
    ['htu is another URL', 'htu', (gw) => proof(gw, { htu: `${ISSUER}/introspect` })],
    // The URL the request reached (supertest's loopback Host) is not the token endpoint discovery publishes.
    ['htu is built from the Host header', 'htu', (gw) => proof(gw, { htu: 'http://127.0.0.1/apigateway/token' })],
    ['htu is not a URL', 'htu', (gw) => proof(gw, { htu: 'token' })],
    ['iat is 301 s old', 'iat', (gw) => proof(gw, { iat: now(gw) - 301 })],
    ['iat is 301 s ahead', 'iat', (gw) => proof(gw, { iat: now(gw) + 301 })],
    ['no iat', 'iat', (gw) => proof(gw, { claims: { iat: undefined } })],
    ['no jti', 'jti', (gw) => proof(gw, { claims: { jti: undefined } })],
    ['an empty jti', 'jti', (gw) => proof(gw, { claims: { jti: '' } })],
    ['no htu', 'htu', (gw) => proof(gw, { claims: { htu: undefined } })],
    ['no jwk', 'jwk', (gw) => proof(gw, { header: { jwk: undefined } })],
    [
      'a private jwk',
      'private key',
      async (gw) => {
        const { privateKey } = await generateKeyPair('ES256', { extractable: true });
        return proof(gw, { key: { ...key, privateKey }, header: { jwk: await exportJWK(privateKey) } });
      },
    ],
    [
      'a signature by another key than its jwk',
      'signature',
      (gw) => proof(gw, { key: { ...other, publicJwk: key.publicJwk } }),
    ],
    [
      'alg HS256',
      'alg',
      async (gw) =>
        new SignJWT({ jti: 'x', htm: 'POST', htu: TOKEN_URL, iat: now(gw) })
          .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.publicJwk })
          .sign(new TextEncoder().encode('a shared secret of at least 32 bytes!!')),
    ],
    [
      'alg none',
      'compact JWS',
      async (gw) => {
        const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
        return `${part({ alg: 'none', typ: 'dpop+jwt', jwk: key.publicJwk })}.${part({ jti: 'x', htm: 'POST', htu: TOKEN_URL, iat: now(gw) })}.`;
      },
    ],
    ['not a JWS', 'compact JWS', async () => 'not-a-proof'],
    ['an oversized header', 'compact JWS', async () => `${'a'.repeat(9000)}.b.c`],
    ['two DPoP headers', 'more than one DPoP header', async (gw) => [await proof(gw), await proof(gw)]],
  ];

  for (const [what, named, make] of refusals) {
    it(`${what}: 400 invalid_dpop_proof, and the auth_req_id is not used up`, async () => {
      const gw = createTestGateway();
      const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
      const res = await tokenRequest(gw, id, await make(gw));
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_dpop_proof');
      expect(res.body.error_description).toMatch(/^the DPoP proof was refused: /);
      expect(res.body.error_description).toContain(named);
      expect(res.headers['cache-control']).toBe('no-store');
      const retry = await tokenRequest(gw, id, await proof(gw));
      expect(retry.status).toBe(200);
      expect(retry.body.token_type).toBe('DPoP');
    });
  }

  it('accepts a proof within the window on either side, and ignores htu query and fragment', async () => {
    for (const overrides of [
      { iat: -299 },
      { iat: 299 },
      { htu: `${TOKEN_URL}?x=1#f` },
      { htu: 'HTTP://GATEWAY.TEST:80/apigateway/token' },
    ]) {
      const gw = createTestGateway();
      const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
      const { iat, ...rest } = overrides as { iat?: number; htu?: string };
      const res = await tokenRequest(gw, id, await proof(gw, { ...rest, iat: now(gw) + (iat ?? 0) }));
      expect(res.status, JSON.stringify(overrides)).toBe(200);
      expect(res.body.token_type).toBe('DPoP');
    }
  });

  it('a proof is used once: the second token request with it is refused', async () => {
    const gw = createTestGateway();
    const once = await proof(gw);
    const first = await tokenRequest(gw, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP), once);
    expect(first.status).toBe(200);
    const second = await tokenRequest(gw, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP), once);
    expect(second.status).toBe(400);
    expect(second.body).toEqual({
      error: 'invalid_dpop_proof',
      error_description: 'the DPoP proof was refused: its jti has been used before',
    });
  });

  it('no description quotes the proof', async () => {
    const gw = createTestGateway();
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
    const res = await tokenRequest(gw, id, await proof(gw, { htm: 'GET', claims: { jti: 'secret-jti-value' } }));
    expect(res.text).not.toContain('secret-jti-value');
    expect(res.text).not.toContain('GET');
  });
});

describe('DPoP proofs at the guard', () => {
  let key: ProofKey;
  beforeAll(async () => {
    key = await proofKey('ES384');
  });

  async function boundToken(gw: TestGateway): Promise<string> {
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
    const res = await tokenRequest(
      gw,
      id,
      await handProof({ key, htm: 'POST', htu: TOKEN_URL, iat: Math.floor(gw.clock.now / 1000) }),
    );
    expect(res.body.token_type).toBe('DPoP');
    return res.body.access_token as string;
  }

  const apiProof = (gw: TestGateway, token: string, overrides: Partial<HandProof> = {}) =>
    handProof({
      key,
      htm: 'POST',
      htu: 'http://gateway.test/sim-swap/check',
      iat: Math.floor(gw.clock.now / 1000),
      accessToken: token,
      ...overrides,
    });

  it('a proof with the right ath passes; without ath, or with the hash of another token: 401', async () => {
    const gw = createTestGateway();
    const token = await boundToken(gw);
    const call = (proof: string) =>
      request(gw.app).post('/sim-swap/check').set('Authorization', `DPoP ${token}`).set('DPoP', proof);
    expect((await call(await apiProof(gw, token))).status).toBe(200);
    for (const proof of [
      await apiProof(gw, token, { claims: { ath: undefined } }),
      await apiProof(gw, token, { accessToken: `${token}x` }),
    ]) {
      const res = await call(proof);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toContain(
        'DPoP realm="http://gateway.test/apigateway", error="invalid_dpop_proof", error_description="the DPoP proof was refused: its ath',
      );
    }
  });

  it('htu is the issuer origin and the path, whatever the Host header says', async () => {
    const gw = createTestGateway();
    const token = await boundToken(gw);
    const spoofed = await request(gw.app)
      .post('/sim-swap/check')
      .set('Host', 'attacker.example')
      .set('Authorization', `DPoP ${token}`)
      .set('DPoP', await apiProof(gw, token, { htu: 'http://attacker.example/sim-swap/check' }));
    expect(spoofed.status).toBe(401);
    const right = await request(gw.app)
      .post('/sim-swap/check')
      .set('Host', 'attacker.example')
      .set('Authorization', `DPoP ${token}`)
      .set('DPoP', await apiProof(gw, token));
    expect(right.status).toBe(200);
  });

  it('publicOrigin names the service API origin when it is not the issuer', async () => {
    const gw = createTestGateway();
    gw.app.post(
      '/public/check',
      gw.netauth.guard({ scope: 'sim-swap', publicOrigin: 'https://api.operator.example' }),
      (_req, res) => void res.json({ ok: true }),
    );
    const token = await boundToken(gw);
    const call = async (htu: string) =>
      request(gw.app)
        .post('/public/check')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await apiProof(gw, token, { htu }));
    expect((await call('http://gateway.test/public/check')).status).toBe(401);
    expect((await call('https://api.operator.example/public/check')).status).toBe(200);
    expect(() => gw.netauth.guard({ publicOrigin: 'https://api.operator.example/base' })).toThrow(
      /publicOrigin must be an http\(s\) origin without path/,
    );
    expect(() => gw.netauth.guard({ publicOrigin: 'api.operator.example' })).toThrow(
      /publicOrigin must be an absolute URL/,
    );
  });
});
