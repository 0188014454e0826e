import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { SECRET, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ALICE_IP, CALLBACK, LOCATION, SIM_SWAP, consentForm } from '../helpers/frontend.js';

/**
 * The frontend flow as a relying party built on openid-client v6 runs it, against a listening server:
 * discovery, buildAuthorizationUrl with PKCE S256 and state, the browser's redirects (fetch, manual),
 * authorizationCodeGrant with the verifier and the expected state (and RFC 9207 iss checked by the
 * library), then the service API with the token.
 */
describe('interop: openid-client v6, authorization code flow with PKCE', () => {
  let server: Server;
  let base: string;
  let gw: TestGateway;
  let config: client.Configuration;

  beforeAll(async () => {
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    gw = createTestGateway({ issuer: `${base}/apigateway` });
    server.on('request', gw.app);
    config = await client.discovery(
      new URL(`${base}/apigateway`),
      'app-1',
      undefined,
      client.ClientSecretBasic(SECRET),
      {
        execute: [client.allowInsecureRequests],
      },
    );
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await gw.netauth.close();
  });

  /** The phone's browser: the operator's edge reports the device address. */
  function browser(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('X-Forwarded-For', ALICE_IP);
    return fetch(url, { ...init, headers, redirect: 'manual' });
  }

  async function authorizationUrl(scope: string) {
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope,
      state,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url, codeVerifier, state };
  }

  it('discovery finds the authorization and token endpoints', () => {
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(`${base}/apigateway`);
    expect(metadata.authorization_endpoint).toBe(`${base}/apigateway/authorize`);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
  });

  it('consent-free scope: redirect with code, token, service API', async () => {
    const { url, codeVerifier, state } = await authorizationUrl(SIM_SWAP);
    const res = await browser(url);
    expect(res.status).toBe(302);
    const callbackUrl = new URL(res.headers.get('location')!);
    expect(callbackUrl.searchParams.get('iss')).toBe(`${base}/apigateway`);

    const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
    });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.scope).toBe(SIM_SWAP);

    const api = await fetch(`${base}/sim-swap/check`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tokens.access_token}` },
    });
    expect(api.status).toBe(200);
    expect(await api.json()).toMatchObject({ subscriber: 'sub-alice', clientId: 'app-1' });
  });

  it('consent scope: through the consent page, then the same', async () => {
    const { url, codeVerifier, state } = await authorizationUrl(LOCATION);
    const first = await browser(url);
    expect(first.status).toBe(302);
    const pageUrl = new URL(first.headers.get('location')!);
    const cookie = first.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const page = await browser(pageUrl, { headers: { Cookie: cookie } });
    expect(page.status).toBe(200);
    const form = consentForm(await page.text());
    const answer = await browser(new URL(form.action, pageUrl), {
      method: 'POST',
      headers: { Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' }),
    });
    expect(answer.status).toBe(303);

    const tokens = await client.authorizationCodeGrant(config, new URL(answer.headers.get('location')!), {
      pkceCodeVerifier: codeVerifier,
      expectedState: state,
    });
    const api = await fetch(`${base}/location`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    expect(api.status).toBe(200);
  });

  it('a wrong verifier is refused by the server (invalid_grant)', async () => {
    const { url, state } = await authorizationUrl(SIM_SWAP);
    const res = await browser(url);
    await expect(
      client.authorizationCodeGrant(config, new URL(res.headers.get('location')!), {
        pkceCodeVerifier: client.randomPKCECodeVerifier(),
        expectedState: state,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('an error redirect is surfaced by the library with its code', async () => {
    const { url, codeVerifier, state } = await authorizationUrl('dpv:Marketing#device-location');
    const res = await browser(url);
    await expect(
      client.authorizationCodeGrant(config, new URL(res.headers.get('location')!), {
        pkceCodeVerifier: codeVerifier,
        expectedState: state,
      }),
    ).rejects.toMatchObject({ error: 'access_denied' });
  });
});
