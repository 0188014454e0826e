import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import * as client from 'openid-client';
import { decodeJwt, importJWK } from 'jose';
import { listen } from '../helpers/listen.js';
import { dpopHandle } from '../helpers/dpop.js';
import { CAMARA_KEY } from '../helpers/client-jwts.js';
import { JWT_BEARER, POPULATION, bearerAssertion, createGrantsGateway } from '../helpers/grants.js';
import { SIM_SWAP } from '../helpers/gateway.js';

/**
 * DPoP (RFC 9449) with the grants beyond the seed's two, openid-client v6 as the application: a proof at the token
 * endpoint binds the token of the refresh, client credentials and JWT bearer grants as it does the others; the
 * refresh token itself is not bound (RFC 9449 §5: only public clients'), so its next access token is bound again
 * only when a proof comes with the refresh; a single-use bound token is spent once, with its proof.
 */
describe('interop: DPoP with refresh, client credentials and JWT bearer (openid-client v6)', () => {
  let base: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const host = express();
    const server = await listen(host);
    base = server.url;
    host.use(createGrantsGateway({ issuer: `${base}/apigateway`, now: Date.now, accessTokenFormat: 'jwt' }).app);
    close = server.close;
  });
  afterAll(() => close());

  const configuration = (clientId: string, auth: client.ClientAuth) =>
    client.discovery(new URL(`${base}/apigateway`), clientId, undefined, auth, {
      execute: [client.allowInsecureRequests],
    });

  async function call(
    config: client.Configuration,
    token: string,
    path: string,
    method: string,
    dpop: client.DPoPHandle,
  ): Promise<Response> {
    try {
      return await client.fetchProtectedResource(
        config,
        token,
        new URL(`${base}${path}`),
        method,
        undefined,
        undefined,
        { DPoP: dpop },
      );
    } catch (error) {
      if (error instanceof client.WWWAuthenticateChallengeError) return error.response;
      throw error;
    }
  }

  it('refresh_token: a proof binds the next access token; without one: invalid_dpop_proof, never Bearer', async () => {
    const config = await configuration('offline-app', client.ClientSecretBasic('offline-secret'));
    const { handle, jkt } = await dpopHandle(config);
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'tel:+34600000001',
      scope: `${SIM_SWAP} offline_access`,
    });
    const first = await client.pollBackchannelAuthenticationGrant(config, { ...started, interval: 0 }, undefined, {
      DPoP: handle,
    });
    expect(first.token_type).toBe('dpop');
    const bound = await client.refreshTokenGrant(config, first.refresh_token!, undefined, { DPoP: handle });
    expect(bound.token_type).toBe('dpop');
    expect(decodeJwt(bound.access_token).cnf).toEqual({ jkt });
    expect((await call(config, bound.access_token, '/sim-swap/check', 'POST', handle)).status).toBe(200);
    // Issue 32, item 10: a bound grant never turns into a Bearer token.
    const bare = client.refreshTokenGrant(config, bound.refresh_token!);
    await expect(bare).rejects.toMatchObject({ error: 'invalid_dpop_proof' });
    const again = await client.refreshTokenGrant(config, bound.refresh_token!, undefined, { DPoP: handle });
    expect(again.token_type).toBe('dpop');
  });

  it('client_credentials: a proof binds the two-legged token', async () => {
    const config = await configuration('service-app', client.ClientSecretBasic('service-secret'));
    const { handle, jkt } = await dpopHandle(config);
    const tokens = await client.clientCredentialsGrant(config, { scope: POPULATION }, { DPoP: handle });
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token)).toMatchObject({ cnf: { jkt }, two_legged: true });
    expect((await call(config, tokens.access_token, '/population', 'GET', handle)).status).toBe(200);
  });

  it('JWT bearer: a proof binds the token, and a single-use bound token is spent once', async () => {
    const { alg: _alg, ...jwk } = CAMARA_KEY.privateJwk;
    const config = await configuration(
      'backend-app',
      client.PrivateKeyJwt({
        key: (await importJWK(jwk, CAMARA_KEY.alg)) as client.CryptoKey,
        kid: CAMARA_KEY.privateJwk.kid!,
      }),
    );
    const { handle, jkt } = await dpopHandle(config);
    const assertion = await bearerAssertion('tel:+34600000001', 'dpv:FraudPreventionAndDetection number-verification', {
      now: Math.floor(Date.now() / 1000),
      claims: { aud: config.serverMetadata().token_endpoint },
    });
    const tokens = await client.genericGrantRequest(config, JWT_BEARER, { assertion }, { DPoP: handle });
    expect(tokens.token_type).toBe('dpop');
    expect(tokens.expires_in).toBe(300);
    expect(decodeJwt(tokens.access_token)).toMatchObject({ cnf: { jkt }, single_use: true });
    expect((await call(config, tokens.access_token, '/number-verification/verify', 'POST', handle)).status).toBe(200);
    expect((await call(config, tokens.access_token, '/number-verification/verify', 'POST', handle)).status).toBe(401);
  });
});
