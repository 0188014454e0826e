/**
 * Issue 14, app side: an application is CAMARA-conformant by configuration alone. Given `privateKey` and
 * `signedRequests: true`, the companion authenticates with private_key_jwt (openid-client's PrivateKeyJwt)
 * and signs its requests: JAR at /authorize (openid-client's buildAuthorizationUrlWithJAR, with the four
 * plain parameters the profile requires) and a signed `request` at bc-authorize (CIBA Core §7.1.1).
 *
 * Both gateways run them: node-oidc-provider configured to refuse any unsigned request of this client, and
 * this package's gateway with the client registered `requireSignedRequestObject`. Whether a gateway can serve
 * the CAMARA client is read from its discovery metadata (private_key_jwt, request objects, signed
 * bc-authorize): one that cannot is skipped, and the reason printed, rather than failing or passing silently.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import express from 'express';
import { decodeJwt, decodeProtectedHeader, importJWK } from 'jose';
import * as oidc from 'openid-client';
import { createNetAuthClient } from '../../lib/client/index.js';
import { CAMARA_KEY, GATEWAYS } from '../helpers/client-gateways.js';
import { clientOptions, json, mountClientApp, rejection } from '../helpers/client-app.js';
import { describeNoSecretsInErrors, rememberSecrets, watchSecrets } from '../helpers/client-secrets.js';
import { listen } from '../helpers/listen.js';
import { Browser } from '../helpers/browser.js';

watchSecrets();
rememberSecrets(CAMARA_KEY.d, CAMARA_KEY.p, CAMARA_KEY.q);

const host = express();
const server = await listen(host);
// One application per gateway, each at its own prefix (and redirect URI).
const prefixOf = (index: number): string => `/camara-${index}`;
const gateways = await Promise.all(
  GATEWAYS.map(({ start }, index) =>
    start({ secret: [`${server.url}/app/callback`], camara: [`${server.url}${prefixOf(index)}/callback`] }),
  ),
);
afterAll(async () => {
  await server.close();
  await Promise.all(gateways.map((gw) => gw.close()));
});

/** The form body of the last request the client sent to an endpoint whose path ends with `suffix`. */
function sentBody(spy: { mock: { calls: unknown[][] } }, suffix: string): URLSearchParams {
  const call = spy.mock.calls.filter(([input]) => String(input).split('?')[0]!.endsWith(suffix)).at(-1);
  if (!call) throw new Error(`nothing was sent to …${suffix}`);
  const body = (call[1] as RequestInit | undefined)?.body;
  return new URLSearchParams(body instanceof URLSearchParams ? body : String(body));
}

/** The CAMARA profile's limits on a signed JWT: `exp - iat` at most 300 s, `iat` not in the future, a `jti`. */
function expectCamaraLifetime(claims: Record<string, unknown>): void {
  const iat = claims.iat as number;
  const exp = claims.exp as number;
  expect(exp - iat).toBeGreaterThan(0);
  expect(exp - iat).toBeLessThanOrEqual(300);
  expect(iat).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
  expect(claims.jti).toEqual(expect.any(String));
}

for (const [index, gw] of gateways.entries()) {
  const reason = gw.camaraUnsupported;
  if (reason) {
    console.warn(
      `camara.test: the CAMARA client tests against ${gw.name} are SKIPPED: ${reason}. They run by themselves once it supports private_key_jwt and signed requests.`,
    );
  }
  const app = reason ? undefined : mountClientApp(host, server.url, prefixOf(index), gw, 'camara');

  describe(`the CAMARA client (private_key_jwt, signed requests) against ${gw.name}${reason ? ` [skipped: ${reason}]` : ''}`, () => {
    it.skipIf(reason)(
      'backend flow: a private_key_jwt assertion and a signed bc-authorize request; the token works',
      async () => {
        const spy = vi.spyOn(globalThis, 'fetch');
        try {
          const token = await app!.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
          expect(
            (await fetch(gw.serviceApi, { headers: { authorization: `Bearer ${token.access_token}` } })).status,
          ).toBe(200);

          const metadata = (await app!.client.configuration()).serverMetadata();
          const sent = sentBody(spy, new URL(metadata.backchannel_authentication_endpoint!).pathname);
          // Only the client authentication and the signed request travel in the clear.
          expect([...sent.keys()].sort()).toEqual([
            'client_assertion',
            'client_assertion_type',
            'client_id',
            'request',
          ]);
          expect(sent.get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
          const request = decodeJwt(sent.get('request')!);
          expect(decodeProtectedHeader(sent.get('request')!)).toMatchObject({ alg: 'RS256', kid: CAMARA_KEY.kid });
          expect(request).toMatchObject({
            iss: gw.camaraClient.clientId,
            aud: gw.issuer,
            login_hint: gw.hints.approved,
            scope: gw.scope,
          });
          expect(request.sub).toBeUndefined();
          expectCamaraLifetime(request);
          const assertion = decodeJwt(sent.get('client_assertion')!);
          expect(assertion).toMatchObject({
            iss: gw.camaraClient.clientId,
            sub: gw.camaraClient.clientId,
            aud: gw.issuer,
          });
          expectCamaraLifetime(assertion);
          // The token request authenticates the same way.
          expect(sentBody(spy, new URL(metadata.token_endpoint!).pathname).get('client_assertion')).toEqual(
            expect.any(String),
          );
        } finally {
          spy.mockRestore();
        }
      },
    );

    it.skipIf(reason)(
      'frontend flow with JAR: the signed request object and the plain parameters agree; the token works',
      async () => {
        const browser = new Browser();
        const started = await browser.request(`${app!.url}/start`);
        expect(started.status).toBe(302);
        const authorize = new URL(started.headers.get('location')!);
        const object = decodeJwt(authorize.searchParams.get('request')!);
        expect(object).toMatchObject({
          iss: gw.camaraClient.clientId,
          aud: gw.issuer,
          client_id: gw.camaraClient.clientId,
          response_type: 'code',
          code_challenge_method: 'S256',
        });
        expectCamaraLifetime(object);
        // The CAMARA profile: scope, response_type, client_id and redirect_uri also in the plain, equal to the signed ones.
        for (const name of ['scope', 'response_type', 'client_id', 'redirect_uri'])
          expect(authorize.searchParams.get(name)).toBe(object[name]);
        // Everything else (state, PKCE, login_hint) only inside the signed object.
        expect(authorize.searchParams.get('state')).toBeNull();
        expect(authorize.searchParams.get('code_challenge')).toBeNull();

        const { res } = await browser.navigate(authorize);
        const body = await json(res);
        expect(body.token).toMatchObject({ scope: gw.scope, expired: false });
        expect((await browser.request(`${app!.url}/api`)).status).toBe(200);
      },
    );

    it.skipIf(reason)(
      'requireToken() and logout(): the revocation authenticates with private_key_jwt too',
      async () => {
        const browser = new Browser();
        const { res } = await browser.navigate(`${app!.url}/protected`);
        const token = ((await json(res)).token as { access_token: string }).access_token;
        const config = await app!.client.configuration();
        expect((await oidc.tokenIntrospection(config, token)).active).toBe(true);
        expect((await browser.request(`${app!.url}/logout`, { method: 'POST' })).status).toBe(302);
        expect((await oidc.tokenIntrospection(config, token)).active).toBe(false);
      },
    );

    it.skipIf(reason)('a CryptoKey instead of a JWK: the same flow', async () => {
      const key = (await importJWK(CAMARA_KEY, 'RS256')) as oidc.CryptoKey;
      const options = clientOptions(gw, `${server.url}${prefixOf(index)}`, 'camara', { offset: 0 });
      const client = createNetAuthClient({ ...options, privateKey: { key, kid: CAMARA_KEY.kid! } });
      const token = await client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
      expect(token.scope).toBe(gw.scope);
    });

    it.skipIf(reason)(
      'the control: unsigned requests of this client are refused by the gateway (400, not 502)',
      async () => {
        const unsigned = createNetAuthClient({
          ...clientOptions(gw, `${server.url}${prefixOf(index)}`, 'camara', { offset: 0 }),
          signedRequests: false,
        });
        const error = await rejection(unsigned.backchannel({ login_hint: gw.hints.approved, scope: gw.scope }));
        expect(error).toMatchObject({ kind: 'authorization_error', error: 'invalid_request', status: 400 });
      },
    );
  });
}

describeNoSecretsInErrors('camara', { errors: 1, secrets: 10 });
