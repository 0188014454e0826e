import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { SignJWT, importJWK } from 'jose';
import type { RegisteredClient } from '../../lib/index.js';
import { CLIENTS, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ALICE_IP, CALLBACK, SIM_SWAP } from '../helpers/frontend.js';
import {
  CAMARA_CLIENT,
  CAMARA_KEY,
  FOREIGN_CAMARA_KEY,
  SIGNED_ONLY_CLIENT,
  ecPair,
  type ClientKeyPair,
} from '../helpers/client-jwts.js';

/**
 * The CAMARA profile end to end with the real openid-client v6 as the application: `PrivateKeyJwt` client
 * authentication, a signed `request` at bc-authorize (CIBA) and JAR (`buildAuthorizationUrlWithJAR`) at
 * /authorize, against a listening gateway; the tokens then open the service API behind the guard. One client's
 * keys are inline, another's are served from a jwksUri.
 */
describe('interop: openid-client v6 with private_key_jwt and signed requests (CAMARA profile)', () => {
  let server: Server;
  let jwksServer: Server;
  let base: string;
  let gw: TestGateway;
  const REMOTE_KEY = ecPair('remote-ec');

  beforeAll(async () => {
    jwksServer = createServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/jwk-set+json' })
        .end(JSON.stringify({ keys: [REMOTE_KEY.publicJwk] }));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const { jwks: _inline, ...keyless } = CAMARA_CLIENT;
    const remote: RegisteredClient = {
      ...keyless,
      clientId: 'remote-aggregator',
      jwksUri: `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`,
      requireSignedRequestObject: true,
    };
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // openid-client signs with the real clock, so the gateway runs on it too.
    gw = createTestGateway({
      issuer: `${base}/apigateway`,
      clients: [...CLIENTS, CAMARA_CLIENT, SIGNED_ONLY_CLIENT, remote],
      now: Date.now,
      lifetimes: { pollInterval: 1 },
      // The remote client's development key server, on loopback.
      clientJwks: { internalOrigins: [new URL(remote.jwksUri!).origin] },
    });
    server.on('request', gw.app);
  });

  afterAll(async () => {
    server.closeAllConnections();
    jwksServer.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => jwksServer.close(() => resolve()));
    await gw.netauth.close();
  });

  async function signingKey(pair: ClientKeyPair): Promise<client.PrivateKey> {
    const { alg: _alg, ...jwk } = pair.privateJwk;
    return { key: (await importJWK(jwk, pair.alg)) as client.CryptoKey, kid: pair.privateJwk.kid! };
  }

  async function configuration(clientId: string, pair: ClientKeyPair): Promise<client.Configuration> {
    return client.discovery(
      new URL(`${base}/apigateway`),
      clientId,
      undefined,
      client.PrivateKeyJwt(await signingKey(pair)),
      {
        execute: [client.allowInsecureRequests],
      },
    );
  }

  /** CIBA Core §7.1.1: the authentication request's parameters as a JWT signed by the client's key. */
  async function signedRequest(
    clientId: string,
    pair: ClientKeyPair,
    parameters: Record<string, string>,
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const { key, kid } = await signingKey(pair);
    return new SignJWT({
      ...parameters,
      iss: clientId,
      aud: `${base}/apigateway`,
      iat: now,
      nbf: now,
      exp: now + 60,
      jti: randomUUID(),
    })
      .setProtectedHeader({ alg: pair.alg, kid, typ: 'oauth-authz-req+jwt' })
      .sign(key);
  }

  async function callServiceApi(accessToken: string): Promise<Response> {
    return fetch(`${base}/sim-swap/check`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } });
  }

  it('discovery tells openid-client what the gateway supports', async () => {
    const metadata = (await configuration('aggregator', CAMARA_KEY)).serverMetadata();
    expect(metadata.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(metadata.request_parameter_supported).toBe(true);
    expect(metadata.request_uri_parameter_supported).toBe(false);
    expect(metadata.backchannel_authentication_request_signing_alg_values_supported).toContain('ES256');
  });

  it.each([
    ['inline jwks, RS256', 'aggregator', CAMARA_KEY],
    ['jwksUri, ES256', 'remote-aggregator', REMOTE_KEY],
  ] as const)('CIBA with a signed request (%s): token, then the service API', async (_name, clientId, pair) => {
    const config = await configuration(clientId, pair);
    const request = await signedRequest(clientId, pair, { login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    const started = await client.initiateBackchannelAuthentication(config, { request });
    const tokens = await client.pollBackchannelAuthenticationGrant(config, started);
    expect(tokens.scope).toBe(SIM_SWAP);
    const api = await callServiceApi(tokens.access_token);
    expect(api.status).toBe(200);
    expect(await api.json()).toMatchObject({ subscriber: 'sub-alice', clientId });
  });

  it('the code flow with JAR and PKCE: code, token, then the service API', async () => {
    const config = await configuration('signed-only', CAMARA_KEY);
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const parameters = {
      redirect_uri: CALLBACK,
      scope: SIM_SWAP,
      state,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    };
    const url = await client.buildAuthorizationUrlWithJAR(config, parameters, await signingKey(CAMARA_KEY));
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request']);
    // The CAMARA profile: scope, response_type, client_id and redirect_uri also as plain parameters.
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', SIM_SWAP);
    url.searchParams.set('redirect_uri', CALLBACK);
    const res = await fetch(url, { headers: { 'X-Forwarded-For': ALICE_IP }, redirect: 'manual' });
    expect(res.status).toBe(302);
    const callbackUrl = new URL(res.headers.get('location')!);
    expect(callbackUrl.searchParams.get('state')).toBe(state);
    const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
    });
    expect(tokens.scope).toBe(SIM_SWAP);
    expect((await callServiceApi(tokens.access_token)).status).toBe(200);
  });

  it('errors reach openid-client as OAuth errors, never 5xx', async () => {
    // An assertion signed by a key the client never registered.
    const foreign = await configuration('aggregator', FOREIGN_CAMARA_KEY);
    await expect(
      client.initiateBackchannelAuthentication(foreign, { login_hint: 'tel:+34600000001', scope: SIM_SWAP }),
    ).rejects.toMatchObject({
      error: 'invalid_client',
      status: 401,
    });
    // A signed request the gateway cannot verify.
    const config = await configuration('aggregator', CAMARA_KEY);
    const forged = await signedRequest('aggregator', FOREIGN_CAMARA_KEY, {
      login_hint: 'tel:+34600000001',
      scope: SIM_SWAP,
    });
    await expect(client.initiateBackchannelAuthentication(config, { request: forged })).rejects.toMatchObject({
      error: 'invalid_request_object',
      status: 400,
    });
    // A client that must sign, sending an unsigned request.
    const remote = await configuration('remote-aggregator', REMOTE_KEY);
    await expect(
      client.initiateBackchannelAuthentication(remote, { login_hint: 'tel:+34600000001', scope: SIM_SWAP }),
    ).rejects.toMatchObject({
      error: 'invalid_request',
      status: 400,
    });
  });
});
