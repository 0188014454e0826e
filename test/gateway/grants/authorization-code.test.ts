import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { basic, createTestGateway } from '../../helpers/gateway.js';
import {
  APP1_AUTH,
  CALLBACK,
  CLIENTS_WITH_PKCE,
  SIM_SWAP,
  callApi,
  codeFor,
  pkcePair,
  redeem,
} from '../../helpers/frontend.js';

/** docs/protocol.md, "Token endpoint: POST /token", authorization code. */

const CODE_ONLY = basic('code-only', 'code-secret');
const PKCE_APP = basic('pkce-app', 'pkce-secret');

function expectInvalidGrant(res: request.Response): void {
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.body.error).toBe('invalid_grant');
}

describe('authorization_code grant', () => {
  it('exchanges a code for a bearer token the guard accepts', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const res = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/),
      token_type: 'Bearer',
      expires_in: 3600,
      scope: SIM_SWAP,
    });
    const api = await callApi(gw.app, res.body.access_token as string);
    expect(api.status).toBe(200);
    expect(api.body).toMatchObject({
      subscriber: 'sub-alice',
      clientId: 'app-1',
      purpose: 'FraudPreventionAndDetection',
    });
  });

  it('works with client_secret_basic exactly as openid-client encodes it (see interop.test.ts too)', async () => {
    const gw = createTestGateway();
    const res = await redeem(gw.app, { code: await codeFor(gw), redirect_uri: CALLBACK, client_id: 'app-1' });
    expect(res.status).toBe(200);
  });

  it('missing code or redirect_uri: invalid_request, and the code is not burnt', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const noRedirect = await redeem(gw.app, { code });
    expect(noRedirect.status).toBe(400);
    expect(noRedirect.body.error).toBe('invalid_request');
    const noCode = await redeem(gw.app, { redirect_uri: CALLBACK });
    expect(noCode.body.error).toBe('invalid_request');
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(200);
  });

  it('a code sent twice in one request: invalid_request', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const res = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', APP1_AUTH)
      .type('form')
      .send(`grant_type=authorization_code&code=${code}&code=${code}&redirect_uri=${encodeURIComponent(CALLBACK)}`);
    expect(res.body.error).toBe('invalid_request');
  });

  it('unknown code: invalid_grant', async () => {
    const gw = createTestGateway();
    expectInvalidGrant(await redeem(gw.app, { code: 'A'.repeat(43), redirect_uri: CALLBACK }));
  });

  it('redirect_uri not identical: invalid_grant, and the code is not burnt', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    for (const redirect_uri of [
      `${CALLBACK}/`,
      'https://app.example/Callback',
      `${CALLBACK}?x=1`,
      'https://two.example/cb',
    ]) {
      expectInvalidGrant(await redeem(gw.app, { code, redirect_uri }));
    }
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(200);
  });

  it("another client's code: invalid_grant, and the code is not burnt", async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }, CODE_ONLY));
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(200);
  });

  it('expired (lifetimes.code, 60 s by default): invalid_grant', async () => {
    const gw = createTestGateway();
    const fresh = await codeFor(gw);
    const stale = await codeFor(gw);
    gw.clock.advance(59);
    expect((await redeem(gw.app, { code: fresh, redirect_uri: CALLBACK })).status).toBe(200);
    gw.clock.advance(1);
    expectInvalidGrant(await redeem(gw.app, { code: stale, redirect_uri: CALLBACK }));
  });

  it('a configured code lifetime is honoured', async () => {
    const gw = createTestGateway({ lifetimes: { code: 10 } });
    const code = await codeFor(gw);
    gw.clock.advance(10);
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }));
  });

  it('a client not registered for the grant: unauthorized_client', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const res = await redeem(gw.app, { code, redirect_uri: 'https://two.example/cb' }, basic('app-2', 'other-secret'));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
  });

  it('client authentication failure: 401 invalid_client, and the code is not burnt', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const res = await redeem(gw.app, { code, redirect_uri: CALLBACK }, basic('app-1', 'wrong'));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(200);
  });
});

describe('single use', () => {
  it('a replayed code: invalid_grant, and the token issued from it is then rejected (401) by the guard', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const first = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    expect(first.status).toBe(200);
    const token = first.body.access_token as string;
    expect((await callApi(gw.app, token)).status).toBe(200);
    // Past lifetimes.redemptionRetry (30 s), where a retry of the same client no longer gets the same answer.
    gw.clock.advance(31);

    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }));
    const api = await callApi(gw.app, token);
    expect(api.status).toBe(401);
    expect(api.headers['www-authenticate']).toContain('error="invalid_token"');
    // And it stays dead.
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }));
  });

  it('a replay that fails validation (wrong redirect_uri) does not revoke anything', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const first = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: 'https://app.example/other' }));
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }, CODE_ONLY));
    expect((await callApi(gw.app, first.body.access_token as string)).status).toBe(200);
  });

  it('50 parallel redemptions of one code by its client: one token, the same in every answer', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => redeem(gw.app, { code, redirect_uri: CALLBACK })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const tokens = new Set(results.map((r) => r.body.access_token as string));
    expect(tokens.size).toBe(1);
    // Retries of one redemption (lifetimes.redemptionRetry), not replays: the token lives.
    expect((await callApi(gw.app, [...tokens][0]!)).status).toBe(200);
  });

  it('a retry within lifetimes.redemptionRetry gets the same answer; another client, or a retry after it, does not', async () => {
    const gw = createTestGateway({ lifetimes: { redemptionRetry: 10 } });
    const code = await codeFor(gw);
    const first = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    gw.clock.advance(9);
    const retry = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    expect(retry.status).toBe(200);
    expect(retry.body.access_token).toBe(first.body.access_token);
    expect(retry.body.expires_in).toBe(first.body.expires_in - 9);
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }, CODE_ONLY));
    gw.clock.advance(2);
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }));
    expect((await callApi(gw.app, first.body.access_token as string)).status).toBe(401);
  });

  it('tokens of other codes are untouched by a replay', async () => {
    const gw = createTestGateway();
    const a = await codeFor(gw);
    const b = await codeFor(gw);
    await redeem(gw.app, { code: a, redirect_uri: CALLBACK });
    const tokenB = (await redeem(gw.app, { code: b, redirect_uri: CALLBACK })).body.access_token as string;
    await redeem(gw.app, { code: a, redirect_uri: CALLBACK });
    expect((await callApi(gw.app, tokenB)).status).toBe(200);
  });
});

describe('PKCE (S256)', () => {
  const S256 = 'S256';

  it('the right code_verifier: a token', async () => {
    const gw = createTestGateway();
    const { verifier, challenge } = pkcePair();
    const code = await codeFor(gw, { code_challenge: challenge, code_challenge_method: S256 });
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: verifier })).status).toBe(200);
  });

  it('the RFC 7636 Appendix B example', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw, {
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: S256,
    });
    const res = await redeem(gw.app, {
      code,
      redirect_uri: CALLBACK,
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
    });
    expect(res.status).toBe(200);
  });

  it('a wrong, missing or malformed code_verifier: invalid_grant, and the code is not burnt', async () => {
    const gw = createTestGateway();
    const { verifier, challenge } = pkcePair();
    const code = await codeFor(gw, { code_challenge: challenge, code_challenge_method: S256 });
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: pkcePair().verifier }));
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK }));
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: 'short' }));
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: `${verifier}!` }));
    // The challenge itself is not the verifier (that would be plain).
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: challenge }));
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: verifier })).status).toBe(200);
  });

  it('downgrade: a code_verifier for a code issued without a challenge is invalid_grant', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: pkcePair().verifier }));
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(200);
  });

  it('a client that requires PKCE gets its code only with a challenge, and its token only with the verifier', async () => {
    const gw = createTestGateway({ clients: CLIENTS_WITH_PKCE });
    const { verifier, challenge } = pkcePair();
    const code = await codeFor(gw, {
      client_id: 'pkce-app',
      redirect_uri: 'https://pkce.example/cb',
      code_challenge: challenge,
      code_challenge_method: S256,
    });
    expectInvalidGrant(await redeem(gw.app, { code, redirect_uri: 'https://pkce.example/cb' }, PKCE_APP));
    expect(
      (await redeem(gw.app, { code, redirect_uri: 'https://pkce.example/cb', code_verifier: verifier }, PKCE_APP))
        .status,
    ).toBe(200);
  });

  it('discovery advertises S256 only, and the iss parameter', async () => {
    const gw = createTestGateway();
    const res = await request(gw.app).get('/apigateway/.well-known/openid-configuration');
    expect(res.body.code_challenge_methods_supported).toEqual(['S256']);
    expect(res.body.authorization_response_iss_parameter_supported).toBe(true);
    expect(res.body.grant_types_supported).toContain('authorization_code');
  });
});
