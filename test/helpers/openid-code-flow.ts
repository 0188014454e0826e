import * as client from 'openid-client';
import { expect } from 'vitest';

/** The redirect URI every test client registers (test/helpers/gateway.ts). */
export const REDIRECT_URI = 'https://app.example/callback';

/**
 * One frontend flow through the real openid-client: an authorization URL with PKCE, state and nonce, the gateway's
 * 302 (the device identified from the network, no consent page), then the code grant, with the library validating
 * the ID token. Returns the tokens and the values it sent, for tests that go on with them.
 */
export async function openidCodeFlow(config: client.Configuration, scope: string) {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope,
    state,
    nonce,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  });
  const redirect = await fetch(url, { redirect: 'manual' });
  expect(redirect.status).toBe(302);
  const tokens = await client.authorizationCodeGrant(config, new URL(redirect.headers.get('location')!), {
    pkceCodeVerifier: codeVerifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  return { tokens, codeVerifier, state, nonce };
}
