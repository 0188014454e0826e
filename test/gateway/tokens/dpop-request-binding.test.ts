import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import type { NetAuthOptions } from '../../../lib/index.js';
import { APP1, CIBA, ISSUER, SIM_SWAP, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { startBackchannel } from '../../helpers/requests.js';
import { handProof, proofKey, type ProofKey } from '../../helpers/dpop.js';

/**
 * CAMARA's DPoP request binding (Security and Interoperability Profile, "Request Binding to DPoP Proofs"):
 * `camara:qh` and `camara:bh`, base64url SHA-256 of the raw query string and of the body's bytes, verified when a
 * proof carries them, required where configured, announced in discovery as `camara_dpop_claims_required`.
 */

const hash = (bytes: string): string => createHash('sha256').update(bytes).digest('base64url');
const TOKEN_URL = `${ISSUER}/token`;

let key: ProofKey;
beforeAll(async () => {
  key = await proofKey('ES256');
});

const now = (gw: TestGateway) => Math.floor(gw.clock.now / 1000);

function formOf(authReqId: string): string {
  return `grant_type=${encodeURIComponent(CIBA)}&auth_req_id=${encodeURIComponent(authReqId)}`;
}

async function tokenCall(gw: TestGateway, claims: (form: string) => Record<string, unknown>, path = '/token') {
  const form = formOf(await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP));
  const proof = await handProof({ key, htm: 'POST', htu: TOKEN_URL, iat: now(gw), claims: claims(form) });
  return request(gw.app)
    .post(`/apigateway${path}`)
    .set('Authorization', APP1)
    .set('DPoP', proof)
    .type('form')
    .send(form);
}

/** A gateway with a route that requires both claims and echoes the body it was given. */
function boundGateway(overrides: Partial<NetAuthOptions> = {}): TestGateway {
  const gw = createTestGateway(overrides);
  gw.app.post(
    '/bound/check',
    gw.netauth.guard({ scope: 'sim-swap', dpopClaimsRequired: ['camara:qh', 'camara:bh'] }),
    (req, res) => void res.json({ body: Buffer.isBuffer(req.body) ? `bytes:${req.body.length}` : req.body }),
  );
  return gw;
}

async function boundToken(gw: TestGateway): Promise<string> {
  const res = await tokenCall(gw, () => ({}));
  expect(res.body.token_type).toBe('DPoP');
  return res.body.access_token as string;
}

interface ApiCall {
  query?: string;
  body?: string;
  type?: string;
  claims?: Record<string, unknown>;
  path?: string;
}

async function apiCall(gw: TestGateway, token: string, call: ApiCall) {
  const query = call.query ?? '';
  const path = call.path ?? '/bound/check';
  const proof = await handProof({
    key,
    htm: 'POST',
    htu: `http://gateway.test${path}`,
    iat: now(gw),
    accessToken: token,
    claims: call.claims ?? {},
  });
  const req = request(gw.app)
    .post(`${path}${query === '' ? '' : `?${query}`}`)
    .set('Authorization', `DPoP ${token}`)
    .set('DPoP', proof);
  if (call.body === undefined) return req;
  return req.set('Content-Type', call.type ?? 'application/json').send(call.body);
}

function expectRefused(res: request.Response, description: RegExp): void {
  expect(res.status).toBe(401);
  expect(res.headers['www-authenticate']).toMatch(/DPoP realm="[^"]+", error="invalid_dpop_proof"/);
  expect(res.body.error).toBe('invalid_dpop_proof');
  expect(res.body.error_description).toMatch(description);
}

describe('camara:qh and camara:bh at the token endpoint', () => {
  it('a body hash of the exact form bytes passes; another hash is 400 invalid_dpop_proof', async () => {
    const gw = createTestGateway();
    const good = await tokenCall(gw, (form) => ({ 'camara:bh': hash(form), 'camara:qh': hash('') }));
    expect(good.status).toBe(200);
    expect(good.body.token_type).toBe('DPoP');
    const bad = await tokenCall(gw, (form) => ({ 'camara:bh': hash(`${form}&x=1`) }));
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: 'invalid_dpop_proof',
      error_description: "the DPoP proof was refused: its camara:bh is not the hash of the request's body",
    });
    const query = await tokenCall(gw, () => ({ 'camara:qh': hash('a=1') }), '/token?a=2');
    expect(query.status).toBe(400);
    expect(query.body.error_description).toContain('camara:qh');
    expect((await tokenCall(gw, () => ({ 'camara:qh': hash('a=1') }), '/token?a=1')).status).toBe(200);
    const notString = await tokenCall(gw, (form) => ({ 'camara:bh': [hash(form)] }));
    expect(notString.status).toBe(400);
  });

  it('dpopClaimsRequired: a proof without them is refused, and discovery announces them', async () => {
    const gw = createTestGateway({ dpopClaimsRequired: ['camara:bh', 'camara:qh'] });
    const missing = await tokenCall(gw, (form) => ({ 'camara:bh': hash(form) }));
    expect(missing.status).toBe(400);
    expect(missing.body.error_description).toBe('the DPoP proof was refused: it has no camara:qh claim, required here');
    const both = await tokenCall(gw, (form) => ({ 'camara:bh': hash(form), 'camara:qh': hash('') }));
    expect(both.status).toBe(200);
    const discovery = await request(gw.app).get('/apigateway/.well-known/openid-configuration');
    expect(discovery.body.camara_dpop_claims_required).toEqual(['camara:qh', 'camara:bh']);
    const plain = await request(createTestGateway().app).get('/apigateway/.well-known/openid-configuration');
    expect(plain.body).not.toHaveProperty('camara_dpop_claims_required');
  });

  it('an unknown claim name is a start-up error', () => {
    const wrong = { dpopClaimsRequired: ['camara:xh'] } as unknown as Partial<NetAuthOptions>;
    expect(() => createTestGateway(wrong)).toThrow(/dpopClaimsRequired must be a list of 'camara:qh'/);
    const gw = createTestGateway();
    expect(() => gw.netauth.guard({ dpopClaimsRequired: 'camara:qh' as never })).toThrow(
      /guard dpopClaimsRequired must be a list/,
    );
  });
});

describe('camara:qh and camara:bh at the guard', () => {
  it('hashes of the raw query and the JSON body pass; the route gets the parsed body', async () => {
    const gw = boundGateway();
    const token = await boundToken(gw);
    const body = '{"phoneNumber": "+34600000001"}';
    const query = 'a=b%20c&d=';
    const res = await apiCall(gw, token, {
      query,
      body,
      claims: { 'camara:qh': hash(query), 'camara:bh': hash(body) },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ body: { phoneNumber: '+34600000001' } });
  });

  it("a body the guard cannot read is the client's error: JSON that is not an object or array 400, too large 413", async () => {
    const gw = boundGateway();
    const token = await boundToken(gw);
    for (const body of ['"a string"', '{"a":', 'not json']) {
      const res = await apiCall(gw, token, { body, claims: { 'camara:qh': hash(''), 'camara:bh': hash(body) } });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    const large = `{"a":"${'x'.repeat(20_000)}"}`;
    const res = await apiCall(gw, token, { body: large, claims: { 'camara:qh': hash(''), 'camara:bh': hash(large) } });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('invalid_request');
  });

  it('a wrong or missing hash is 401 invalid_dpop_proof with the DPoP challenge', async () => {
    const gw = boundGateway();
    const token = await boundToken(gw);
    const body = '{"a":1}';
    const cases: Array<[ApiCall, RegExp]> = [
      [{ query: 'a=1', body, claims: { 'camara:qh': hash('a=2'), 'camara:bh': hash(body) } }, /camara:qh is not/],
      [{ query: 'a=1', body, claims: { 'camara:qh': hash('a=1'), 'camara:bh': hash('{"a":2}') } }, /camara:bh is not/],
      [{ query: 'a=1', body, claims: { 'camara:bh': hash(body) } }, /no camara:qh claim/],
      [{ query: 'a=1', body, claims: { 'camara:qh': hash('a=1') } }, /no camara:bh claim/],
    ];
    for (const [call, description] of cases) expectRefused(await apiCall(gw, token, call), description);
  });

  it('no query and no body hash as the empty string; other content types are hashed as bytes', async () => {
    const gw = boundGateway();
    const token = await boundToken(gw);
    const empty = await apiCall(gw, token, { claims: { 'camara:qh': hash(''), 'camara:bh': hash('') } });
    expect(empty.status).toBe(200);
    const text = 'plain words';
    const plain = await apiCall(gw, token, {
      body: text,
      type: 'text/plain',
      claims: { 'camara:qh': hash(''), 'camara:bh': hash(text) },
    });
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({ body: `bytes:${text.length}` });
  });

  it('a route that requires none still verifies the claims a proof carries', async () => {
    const gw = createTestGateway();
    const token = await boundToken(gw);
    const path = '/sim-swap/check';
    const wrong = await apiCall(gw, token, { path, body: '{}', claims: { 'camara:bh': hash('{ }') } });
    expectRefused(wrong, /camara:bh is not/);
    const right = await apiCall(gw, token, { path, body: '{}', claims: { 'camara:bh': hash('{}') } });
    expect(right.status).toBe(200);
  });

  it('a gateway-wide requirement holds on every guarded route', async () => {
    const gw = createTestGateway({ dpopClaimsRequired: ['camara:qh'] });
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
    const proof = await handProof({
      key,
      htm: 'POST',
      htu: TOKEN_URL,
      iat: now(gw),
      claims: { 'camara:qh': hash('') },
    });
    const issued = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', APP1)
      .set('DPoP', proof)
      .type('form')
      .send(formOf(id));
    const token = issued.body.access_token as string;
    const path = '/sim-swap/check';
    expectRefused(await apiCall(gw, token, { path }), /no camara:qh claim/);
    expect((await apiCall(gw, token, { path, claims: { 'camara:qh': hash('') } })).status).toBe(200);
  });

  it('a body parsed before the guard cannot be hashed: the configuration error is reported, not guessed', async () => {
    const errors: unknown[] = [];
    const gw = createTestGateway({ onError: (error) => errors.push(error) });
    const app = express();
    app.use(express.json());
    app.post('/parsed', gw.netauth.guard({ scope: 'sim-swap' }), (_req, res) => void res.json({}));
    const token = await boundToken(gw);
    const proof = await handProof({
      key,
      htm: 'POST',
      htu: 'http://gateway.test/parsed',
      iat: now(gw),
      accessToken: token,
      claims: { 'camara:bh': hash('{}') },
    });
    const res = await request(app)
      .post('/parsed')
      .set('Authorization', `DPoP ${token}`)
      .set('DPoP', proof)
      .set('Content-Type', 'application/json')
      .send('{}');
    expect(res.status).toBe(500);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'NETAUTH_DPOP_BODY_ALREADY_READ' });
    expect(String((errors[0] as Error).message)).toMatch(/mount it before any body parser/);
  });
});
