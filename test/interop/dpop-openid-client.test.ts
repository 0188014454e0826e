import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { RedisStore, type RegisteredClient, type Store } from '../../lib/index.js';
import { APP1, CIBA, CLIENTS, SECRET, SIM_SWAP, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ALICE_IP, CALLBACK } from '../helpers/frontend.js';
import { captureProof, capturedProof, dpopHandle } from '../helpers/dpop.js';
import {
  RedisServer,
  freshPrefix,
  redisServerMissing,
  requireRedisServer,
  skipRedisTests,
} from '../helpers/redis-server.js';

/**
 * DPoP (RFC 9449) end to end with openid-client v6's own DPoP support as the application: tokens bound at the
 * token endpoint (CIBA and the authorization code flow), used at the guard with `fetchProtectedResource`, and
 * every way a proof can fail there. The gateway runs on the real clock, which openid-client's proofs are dated
 * by; `skew` moves the gateway's clock instead of waiting.
 */

const DPOP_CLIENT: RegisteredClient = {
  clientId: 'dpop-app',
  clientSecret: 'dpop-secret',
  redirectUris: [CALLBACK],
  grantTypes: [CIBA, 'authorization_code'],
  scopes: [SIM_SWAP],
  dpopBoundAccessTokens: true,
};

interface Running {
  base: string;
  gw: TestGateway;
  skew: { seconds: number };
  close(): Promise<void>;
}

async function start(overrides: Parameters<typeof createTestGateway>[0] = {}): Promise<Running> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const skew = { seconds: 0 };
  const gw = createTestGateway({
    issuer: `${base}/apigateway`,
    clients: [...CLIENTS, DPOP_CLIENT],
    now: () => Date.now() + skew.seconds * 1000,
    ...overrides,
  });
  server.on('request', gw.app);
  return {
    base,
    gw,
    skew,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gw.netauth.close();
    },
  };
}

function configuration(base: string, clientId = 'app-1', secret = SECRET): Promise<client.Configuration> {
  return client.discovery(new URL(`${base}/apigateway`), clientId, undefined, client.ClientSecretBasic(secret), {
    execute: [client.allowInsecureRequests],
  });
}

/** A backend-flow token (approved at once: sim-swap needs no consent), polled with the handle's proof if given. */
async function cibaToken(config: client.Configuration, dpop?: client.DPoPHandle) {
  const started = await client.initiateBackchannelAuthentication(config, {
    login_hint: 'tel:+34600000001',
    scope: SIM_SWAP,
  });
  return client.genericGrantRequest(config, CIBA, { auth_req_id: started.auth_req_id }, dpop ? { DPoP: dpop } : {});
}

/** The service API, called as openid-client calls a protected resource; the challenge error hands back the response. */
async function callApi(
  config: client.Configuration,
  base: string,
  token: string,
  dpop?: client.DPoPHandle,
): Promise<Response> {
  try {
    return await client.fetchProtectedResource(
      config,
      token,
      new URL(`${base}/sim-swap/check`),
      'POST',
      undefined,
      undefined,
      dpop ? { DPoP: dpop } : {},
    );
  } catch (error) {
    if (error instanceof client.WWWAuthenticateChallengeError) return error.response;
    throw error;
  }
}

/** The service API with the headers given, and nothing added. */
function rawCall(
  base: string,
  headers: Record<string, string>,
  method = 'POST',
  path = '/sim-swap/check',
): Promise<Response> {
  return fetch(`${base}${path}`, { method, headers });
}

/** One proof on 50 parallel calls of the service API: exactly one passes, the others are replays. */
async function oneOfFifty(run: Running, config: client.Configuration): Promise<void> {
  const { handle } = await dpopHandle(config);
  const { access_token: token } = await cibaToken(config, handle);
  const proof = await capturedProof(config, handle, token, `${run.base}/sim-swap/check`, 'POST');
  const answers = await Promise.all(
    Array.from({ length: 50 }, () => rawCall(run.base, { Authorization: `DPoP ${token}`, DPoP: proof })),
  );
  expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
  expect(
    answers.filter((r) => r.status === 401 && dpopChallenge(r)?.includes('error="invalid_dpop_proof"')),
  ).toHaveLength(49);
}

/** The DPoP challenge of a refusal, with its error. */
function dpopChallenge(res: Response): string | undefined {
  return /(?:^|, )(DPoP [\s\S]*)$/.exec(res.headers.get('www-authenticate') ?? '')?.[1];
}

describe('interop: DPoP with openid-client v6 (RFC 9449)', () => {
  let run: Running;
  let config: client.Configuration;

  beforeAll(async () => {
    run = await start();
    config = await configuration(run.base);
  });
  afterAll(() => run.close());

  it('discovery advertises dpop_signing_alg_values_supported', () => {
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toEqual([
      'RS256',
      'PS256',
      'ES256',
      'ES384',
      'EdDSA',
    ]);
  });

  it('backend flow: a proof binds the token (token_type DPoP, cnf.jkt at introspection), which works with its proof', async () => {
    const { handle, jkt } = await dpopHandle(config);
    const tokens = await cibaToken(config, handle);
    expect(tokens.token_type).toBe('dpop');
    const api = await callApi(config, run.base, tokens.access_token, handle);
    expect(api.status).toBe(200);
    expect(await api.json()).toMatchObject({ subscriber: 'sub-alice', clientId: 'app-1' });
    const introspection = await client.tokenIntrospection(config, tokens.access_token);
    expect(introspection).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt } });
  });

  it('frontend flow: the code exchanged with a proof gives a bound token that works with its proof', async () => {
    const { handle } = await dpopHandle(config, 'EdDSA');
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: SIM_SWAP,
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const browser = await fetch(url, { headers: { 'X-Forwarded-For': ALICE_IP }, redirect: 'manual' });
    const tokens = await client.authorizationCodeGrant(
      config,
      new URL(browser.headers.get('location')!),
      { pkceCodeVerifier: verifier, expectedState: state },
      undefined,
      {
        DPoP: handle,
      },
    );
    expect(tokens.token_type).toBe('dpop');
    expect((await callApi(config, run.base, tokens.access_token, handle)).status).toBe(200);
  });

  it('without the proof: 401 with the DPoP challenge (invalid_dpop_proof, algs)', async () => {
    const { handle } = await dpopHandle(config);
    const tokens = await cibaToken(config, handle);
    const res = await rawCall(run.base, { Authorization: `DPoP ${tokens.access_token}` });
    expect(res.status).toBe(401);
    expect(dpopChallenge(res)).toMatch(
      /^DPoP realm="[^"]+", error="invalid_dpop_proof", error_description="[^"]+", scope="sim-swap", algs="RS256 PS256 ES256 ES384 EdDSA"$/,
    );
    expect(await res.json()).toMatchObject({ error: 'invalid_dpop_proof' });
  });

  it('with a proof for another method or another URL: 401 invalid_dpop_proof', async () => {
    const { handle } = await dpopHandle(config);
    const { access_token: token } = await cibaToken(config, handle);
    const forGet = await capturedProof(config, handle, token, `${run.base}/sim-swap/check`, 'GET');
    const forOtherPath = await capturedProof(config, handle, token, `${run.base}/location`, 'POST');
    const forOtherHost = await capturedProof(config, handle, token, `http://elsewhere.example/sim-swap/check`, 'POST');
    for (const proof of [forGet, forOtherPath, forOtherHost]) {
      const res = await rawCall(run.base, { Authorization: `DPoP ${token}`, DPoP: proof });
      expect(res.status).toBe(401);
      expect(dpopChallenge(res)).toContain('error="invalid_dpop_proof"');
    }
    // The same proofs never burnt anything: a right one still passes.
    expect((await callApi(config, run.base, token, handle)).status).toBe(200);
  });

  it('the query is no part of htu (RFC 9449 §4.3): a proof for the path passes with any query', async () => {
    const { handle } = await dpopHandle(config);
    const { access_token: token } = await cibaToken(config, handle);
    const proof = await capturedProof(config, handle, token, `${run.base}/sim-swap/check?a=1`, 'POST');
    const res = await rawCall(run.base, { Authorization: `DPoP ${token}`, DPoP: proof }, 'POST', '/sim-swap/check?b=2');
    expect(res.status).toBe(200);
  });

  it('with a replayed proof: the first call passes, the replay is 401', async () => {
    const { handle } = await dpopHandle(config);
    const { access_token: token } = await cibaToken(config, handle);
    const proof = await capturedProof(config, handle, token, `${run.base}/sim-swap/check`, 'POST');
    expect((await rawCall(run.base, { Authorization: `DPoP ${token}`, DPoP: proof })).status).toBe(200);
    const replay = await rawCall(run.base, { Authorization: `DPoP ${token}`, DPoP: proof });
    expect(replay.status).toBe(401);
    expect(dpopChallenge(replay)).toContain('error="invalid_dpop_proof"');
  });

  it('one proof sent 50 times in parallel: exactly one 200', () => oneOfFifty(run, config));

  it('with a stale iat (the gateway 301 s ahead of the proof): 401; within 300 s: 200', async () => {
    const { handle } = await dpopHandle(config);
    const { access_token: token } = await cibaToken(config, handle);
    run.skew.seconds = 301;
    try {
      const stale = await callApi(config, run.base, token, handle);
      expect(stale.status).toBe(401);
      expect(dpopChallenge(stale)).toContain('error="invalid_dpop_proof"');
      run.skew.seconds = 290;
      expect((await callApi(config, run.base, token, handle)).status).toBe(200);
    } finally {
      run.skew.seconds = 0;
    }
  });

  it("with another key's proof: 401 invalid_dpop_proof", async () => {
    const { handle } = await dpopHandle(config);
    const { handle: other } = await dpopHandle(config);
    const { access_token: token } = await cibaToken(config, handle);
    const res = await callApi(config, run.base, token, other);
    expect(res.status).toBe(401);
    expect(dpopChallenge(res)).toContain('error="invalid_dpop_proof"');
  });

  it('a bound token presented as Bearer is refused: 401 invalid_token in the Bearer challenge, and the DPoP challenge', async () => {
    const { handle } = await dpopHandle(config);
    const { access_token: token } = await cibaToken(config, handle);
    const proof = await capturedProof(config, handle, token, `${run.base}/sim-swap/check`, 'POST');
    const res = await rawCall(run.base, { Authorization: `Bearer ${token}`, DPoP: proof });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(
      /^Bearer realm="[^"]+", error="invalid_token", error_description="[^"]*DPoP-bound[^"]*", scope="sim-swap", DPoP realm="[^"]+", scope="sim-swap", algs="[^"]+"$/,
    );
  });

  it('a proof sent by a client that does not require DPoP never causes an error; a client without a proof gets a Bearer token', async () => {
    // app-1 is not registered with dpopBoundAccessTokens: its proof binds its token (CAMARA: "Supports DPoP").
    const { handle } = await dpopHandle(config);
    expect((await cibaToken(config, handle)).token_type).toBe('dpop');
    const plain = await cibaToken(config);
    expect(plain.token_type).toBe('bearer');
    // An unbound token works as Bearer, with or without a DPoP header beside it...
    expect((await callApi(config, run.base, plain.access_token)).status).toBe(200);
    const stray = await capturedProof(config, handle, plain.access_token, `${run.base}/sim-swap/check`, 'POST');
    expect((await rawCall(run.base, { Authorization: `Bearer ${plain.access_token}`, DPoP: stray })).status).toBe(200);
    // ...but is bound to no key a proof could match: presented with the DPoP scheme it is invalid_token.
    const asDpop = await callApi(config, run.base, plain.access_token, handle);
    expect(asDpop.status).toBe(401);
    expect(dpopChallenge(asDpop)).toContain('error="invalid_token"');
  });

  it('a client registered with dpopBoundAccessTokens must send a proof: 400 invalid_dpop_proof, the request not used up', async () => {
    const dpopConfig = await configuration(run.base, 'dpop-app', 'dpop-secret');
    const started = await client.initiateBackchannelAuthentication(dpopConfig, {
      login_hint: 'tel:+34600000001',
      scope: SIM_SWAP,
    });
    await expect(
      client.genericGrantRequest(dpopConfig, CIBA, { auth_req_id: started.auth_req_id }),
    ).rejects.toMatchObject({ error: 'invalid_dpop_proof', status: 400 });
    const { handle } = await dpopHandle(dpopConfig);
    const tokens = await client.genericGrantRequest(
      dpopConfig,
      CIBA,
      { auth_req_id: started.auth_req_id },
      { DPoP: handle },
    );
    expect(tokens.token_type).toBe('dpop');
    expect((await callApi(dpopConfig, run.base, tokens.access_token, handle)).status).toBe(200);
  });
});

describe('interop: DPoP with JWT access tokens', () => {
  let run: Running;
  let config: client.Configuration;

  beforeAll(async () => {
    run = await start({ accessTokenFormat: 'jwt' });
    config = await configuration(run.base);
  });
  afterAll(() => run.close());

  it('the JWT carries cnf.jkt (RFC 9449 §6.1); verified offline, it works only with its key', async () => {
    const { handle, jkt } = await dpopHandle(config, 'PS256');
    const tokens = await cibaToken(config, handle);
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });
    expect((await callApi(config, run.base, tokens.access_token, handle)).status).toBe(200);
    expect((await callApi(config, run.base, tokens.access_token)).status).toBe(401);
    const { handle: other } = await dpopHandle(config);
    expect((await callApi(config, run.base, tokens.access_token, other)).status).toBe(401);
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({
      token_type: 'DPoP',
      cnf: { jkt },
    });
    // An unbound JWT has no cnf.
    expect(decodeJwt((await cibaToken(config)).access_token).cnf).toBeUndefined();
  });
});

const skipRedis = skipRedisTests('the DPoP replay tests on Redis');

describe.skipIf(skipRedis)(
  `DPoP proof replay on Redis${skipRedis ? ` (skipped: ${redisServerMissing()})` : ''}`,
  () => {
    let redis: RedisServer;
    let store: Store;
    let run: Running;
    let config: client.Configuration;

    beforeAll(async () => {
      requireRedisServer();
      redis = await RedisServer.start();
      store = new RedisStore({ url: redis.url, prefix: freshPrefix() });
      run = await start({ store, rateLimits: false });
      config = await configuration(run.base);
    });
    afterAll(async () => {
      await run?.close();
      await store?.close?.();
      await redis?.destroy();
    });

    it('one proof sent 50 times in parallel: exactly one 200', () => oneOfFifty(run, config));

    it('at the token endpoint too: one proof on 50 parallel token requests binds at most one token', async () => {
      const { handle } = await dpopHandle(config);
      // The proof of one poll, sent with 50 different approved requests: only one may use it.
      const ids = await Promise.all(
        Array.from(
          { length: 50 },
          async () =>
            (
              await client.initiateBackchannelAuthentication(config, {
                login_hint: 'tel:+34600000001',
                scope: SIM_SWAP,
              })
            ).auth_req_id,
        ),
      );
      const proof = await captureProof(config, () =>
        client.genericGrantRequest(config, CIBA, { auth_req_id: ids[0]! }, { DPoP: handle }),
      );
      const answers = await Promise.all(
        ids.map((id) =>
          fetch(`${run.base}/apigateway/token`, {
            method: 'POST',
            headers: { Authorization: APP1, DPoP: proof, 'Content-Type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ grant_type: CIBA, auth_req_id: id }),
          }),
        ),
      );
      const bodies = (await Promise.all(answers.map((r) => r.json()))) as Array<{
        token_type?: string;
        error?: string;
      }>;
      expect(bodies.filter((b) => b.token_type === 'DPoP')).toHaveLength(1);
      expect(bodies.filter((b) => b.error === 'invalid_dpop_proof')).toHaveLength(49);
    });
  },
);
