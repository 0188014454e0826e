import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { createNetAuth, type NetAuth } from '../../lib/index.js';
import { CLIENTS, POLICY, SECRET, SUBSCRIBERS, SIM_SWAP } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';
import { openidCodeFlow } from '../helpers/openid-code-flow.js';
import { KEY_A, KEY_B } from '../helpers/keys.js';

const SALT = 'interop-salt';
const OPENID_SIM_SWAP = `openid ${SIM_SWAP}`;

/**
 * The real openid-client v6 against a listening gateway with ID tokens and JWT access tokens on:
 * it validates the ID token of the CIBA flow (iss, aud, exp, iat, sub; the signature through jwks_uri with
 * non-repudiation checks on), and uses the introspection and revocation endpoints it finds in discovery.
 */
describe('interop: openid-client v6, ID tokens, JWT access tokens, introspection, revocation', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  let netauth: NetAuth;
  let issuer: string;
  let jwksFetches = 0;

  beforeAll(async () => {
    const app = express();
    app.use((req, _res, next) => {
      if (req.path === '/apigateway/jwks') jwksFetches += 1;
      next();
    });
    server = await listen(app);
    issuer = `${server.url}/apigateway`;
    netauth = createNetAuth({
      issuer,
      clients: CLIENTS,
      // Loopback is Alice's mobile line, for the frontend flow.
      subscribers: SUBSCRIBERS.map((s) =>
        s.id === 'sub-alice' ? { ...s, addresses: [...s.addresses!, '127.0.0.1'] } : s,
      ),
      network: { mobileRanges: ['127.0.0.0/8'] },
      consentPolicy: POLICY,
      lifetimes: { pollInterval: 1 },
      idTokens: true,
      accessTokenFormat: 'jwt',
      // Rotation in progress: B signs, A is still published.
      signingKeys: [KEY_B, KEY_A],
      pairwiseSalt: SALT,
    });
    app.use('/apigateway', netauth.router);
    app.post('/sim-swap/check', netauth.guard({ scope: 'sim-swap' }), (req, res) => {
      res.json({ swapped: false, subscriber: req.netauth?.subscriber.id });
    });
  });

  afterAll(async () => {
    await netauth.close();
    await server.close();
  });

  async function configuration(clientId: string, secret: string): Promise<client.Configuration> {
    const config = await client.discovery(new URL(issuer), clientId, undefined, client.ClientSecretBasic(secret), {
      execute: [client.allowInsecureRequests],
    });
    // Also verify the ID token's signature with the keys at jwks_uri.
    client.enableNonRepudiationChecks(config);
    return config;
  }

  async function ciba(config: client.Configuration, scope = OPENID_SIM_SWAP) {
    const started = await client.initiateBackchannelAuthentication(config, { login_hint: 'tel:+34600000001', scope });
    return client.pollBackchannelAuthenticationGrant(config, started);
  }

  it('validates the ID token; sub is pairwise per client and never the phone number', async () => {
    const one = await ciba(await configuration('app-1', SECRET));
    const two = await ciba(await configuration('app-2', 'other-secret'));
    const claimsOne = one.claims();
    const claimsTwo = two.claims();
    expect(claimsOne).toBeDefined();
    expect(claimsTwo).toBeDefined();
    // Named by the client's tel: hint: amr says so (docs/protocol.md); a code flow from the device says hwk.
    expect(claimsOne).toMatchObject({ iss: issuer, aud: 'app-1', amr: ['hint'] });
    expect(claimsTwo).toMatchObject({ iss: issuer, aud: 'app-2' });
    expect(claimsOne!.sub).toBe(createHash('sha256').update(`app-1sub-alice${SALT}`).digest('base64url'));
    expect(claimsOne!.sub).not.toBe(claimsTwo!.sub);
    for (const sub of [claimsOne!.sub, claimsTwo!.sub]) {
      expect(sub).not.toContain('34600000001');
      expect(sub).not.toBe('sub-alice');
    }
    expect(claimsOne).not.toHaveProperty('nonce');
    // The non-repudiation check fetched the published keys to verify the signature.
    expect(jwksFetches).toBeGreaterThan(0);
    expect(typeof claimsOne!.auth_time).toBe('number');
  });

  it('validates the ID token of the frontend flow: nonce, auth_time, the same pairwise sub', async () => {
    const config = await configuration('app-1', SECRET);
    const { tokens, codeVerifier, state, nonce } = await openidCodeFlow(config, OPENID_SIM_SWAP);
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: issuer, aud: 'app-1', nonce, amr: ['hwk'] });
    expect(claims.sub).toBe(createHash('sha256').update(`app-1sub-alice${SALT}`).digest('base64url'));
    expect(typeof claims.auth_time).toBe('number');

    // A wrong expected nonce is caught by the library.
    const again = client.buildAuthorizationUrl(config, {
      redirect_uri: 'https://app.example/callback',
      scope: OPENID_SIM_SWAP,
      state,
      nonce: client.randomNonce(),
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    const second = await fetch(again, { redirect: 'manual' });
    const error = await client
      .authorizationCodeGrant(config, new URL(second.headers.get('location')!), {
        pkceCodeVerifier: codeVerifier,
        expectedState: state,
        expectedNonce: nonce,
      })
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(error).toMatchObject({ code: 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' });
    expect((error!.cause as Error).message).toContain('"nonce"');
  });

  it('no ID token without openid', async () => {
    const tokens = await ciba(await configuration('app-1', SECRET), SIM_SWAP);
    expect(tokens.id_token).toBeUndefined();
    expect(tokens.claims()).toBeUndefined();
  });

  it('the JWT access token works at the guard, introspects, and revocation takes effect at once', async () => {
    const config = await configuration('app-1', SECRET);
    const tokens = await ciba(config);
    expect(decodeJwt(tokens.access_token).client_id).toBe('app-1');
    const callApi = () =>
      fetch(`${server.url}/sim-swap/check`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
    const ok = await callApi();
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ swapped: false, subscriber: 'sub-alice' });

    const introspection = await client.tokenIntrospection(config, tokens.access_token);
    expect(introspection).toMatchObject({
      active: true,
      client_id: 'app-1',
      scope: OPENID_SIM_SWAP,
      iss: issuer,
      token_type: 'Bearer',
    });
    expect(introspection.sub).toBe(tokens.claims()!.sub);

    // Another client sees it inactive, and may not revoke it.
    const other = await configuration('app-2', 'other-secret');
    expect((await client.tokenIntrospection(other, tokens.access_token)).active).toBe(false);
    await expect(client.tokenRevocation(other, tokens.access_token)).rejects.toMatchObject({
      error: 'invalid_request',
      status: 400,
    });
    expect((await callApi()).status).toBe(200);

    await client.tokenRevocation(config, tokens.access_token);
    const refused = await callApi();
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await client.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
    // An unknown token: 200, which openid-client reports as success.
    await client.tokenRevocation(config, 'no-such-token');
  });
});
