/**
 * Issue 33, app side: `clientCredentials()` and `jwtBearer()` against this package's gateway over HTTP (client
 * authentication and DPoP as in the other flows); `assertionAudience: 'endpoint'` on every JWT the client signs;
 * the gateway's error_description in the error's message; a 404 discovery named as a misconfiguration.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import express from 'express';
import { decodeJwt } from 'jose';
import { createNetAuthClient, type NetAuthClientOptions } from '../../lib/client/index.js';
import { BEARER_CLIENT, POPULATION, SERVICE_CLIENT, createGrantsGateway } from '../helpers/grants.js';
import { CAMARA_KEY } from '../helpers/client-jwts.js';
import { SIM_SWAP } from '../helpers/gateway.js';
import { startNetAuthGateway } from '../helpers/client-gateways.js';
import { json, mountClientApp, rejection } from '../helpers/client-app.js';
import { describeNoSecretsInErrors, rememberSecrets, watchSecrets } from '../helpers/client-secrets.js';
import { listen } from '../helpers/listen.js';
import { Browser } from '../helpers/browser.js';

watchSecrets();
rememberSecrets(CAMARA_KEY.privateJwk.d, 'service-secret');

const host = express();
const server = await listen(host);
const issuer = `${server.url}/apigateway`;
// The gateway on the real clock: the client signs its assertions with the real time.
const gw = createGrantsGateway({ issuer, now: Date.now });
host.use(gw.app);
// The CAMARA client (private_key_jwt, signed requests required) of the app-side fixture, for the other flows.
const camaraGw = await startNetAuthGateway({
  secret: [`${server.url}/unused/callback`],
  camara: [`${server.url}/endpoint-aud/callback`],
});
const endpointApp = mountClientApp(host, server.url, '/endpoint-aud', camaraGw, 'camara', {
  assertionAudience: 'endpoint',
});
afterAll(async () => {
  await server.close();
  await camaraGw.close();
});

const base = { gateway: issuer, allowInsecureRequests: true } as const;
const serviceClient = (extra: Partial<NetAuthClientOptions> = {}) =>
  createNetAuthClient({ ...base, clientId: SERVICE_CLIENT.clientId, clientSecret: 'service-secret', ...extra });
const bearerClient = (extra: Partial<NetAuthClientOptions> = {}) =>
  createNetAuthClient({ ...base, clientId: BEARER_CLIENT.clientId, privateKey: CAMARA_KEY.privateJwk, ...extra });

const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } });

/** The form bodies the client sent to a URL whose path ends with `suffix`. */
function sentBodies(spy: { mock: { calls: unknown[][] } }, suffix: string): URLSearchParams[] {
  return spy.mock.calls
    .filter(([input]) => String(input).split('?')[0]!.endsWith(suffix))
    .map(([, init]) => new URLSearchParams((init as RequestInit | undefined)?.body as URLSearchParams));
}

describe('clientCredentials()', () => {
  it('a two-legged token for a scope that processes no personal data; the service API takes it', async () => {
    const token = await serviceClient().clientCredentials({ scope: POPULATION });
    expect(token).toMatchObject({ token_type: 'bearer', scope: POPULATION, expires_in: 3600 });
    expect(token.refresh_token).toBeUndefined();
    const res = await fetch(`${server.url}/population`, bearer(token.access_token));
    expect(await res.json()).toEqual({ clientId: 'service-app', subscriber: null, onRequest: null });
  });

  it('with DPoP: the token is bound to the client key, and client.fetch() proves possession', async () => {
    const client = serviceClient({ dpop: true });
    const token = await client.clientCredentials({ scope: POPULATION });
    expect(token.token_type.toLowerCase()).toBe('dpop');
    const bare = await fetch(`${server.url}/population`, bearer(token.access_token));
    expect(bare.status).toBe(401);
    expect((await client.fetch(token, `${server.url}/population`)).status).toBe(200);
  });

  it("a personal-data scope: authorization_error, and the message carries the gateway's description", async () => {
    const error = await rejection(serviceClient().clientCredentials({ scope: SIM_SWAP }));
    expect(error).toMatchObject({ kind: 'authorization_error', error: 'invalid_scope', status: 400 });
    expect(error.description).toMatch(/processes personal data/);
    expect(error.message).toContain(`the gateway says: ${error.description}`);
  });

  it('an aborted signal: kind aborted, nothing sent', async () => {
    const spy = vi.spyOn(globalThis, 'fetch');
    try {
      const signal = AbortSignal.abort();
      const error = await rejection(serviceClient().clientCredentials({ scope: POPULATION, signal }));
      expect(error.kind).toBe('aborted');
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('jwtBearer()', () => {
  it('an assertion signed with privateKey names subscriber and scope; the token works; aud: the issuer', async () => {
    const spy = vi.spyOn(globalThis, 'fetch');
    try {
      const token = await bearerClient().jwtBearer({ sub: 'tel:+34600000001', scope: SIM_SWAP });
      expect(token).toMatchObject({ token_type: 'bearer', scope: SIM_SWAP });
      expect(token.refresh_token).toBeUndefined();
      const res = await fetch(`${server.url}/sim-swap/check`, { method: 'POST', ...bearer(token.access_token) });
      expect(await res.json()).toMatchObject({ subscriber: 'sub-alice', clientId: 'backend-app' });

      const [sent] = sentBodies(spy, '/apigateway/token');
      expect(sent!.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');
      expect(sent!.get('scope')).toBeNull();
      const assertion = decodeJwt(sent!.get('assertion')!);
      expect(assertion).toMatchObject({ iss: 'backend-app', sub: 'tel:+34600000001', aud: issuer, scope: SIM_SWAP });
      expect(assertion.exp! - assertion.iat!).toBeLessThanOrEqual(300);
      const clientAssertion = decodeJwt(sent!.get('client_assertion')!);
      expect(clientAssertion).toMatchObject({ iss: 'backend-app', sub: 'backend-app', aud: issuer });
    } finally {
      spy.mockRestore();
    }
  });

  it("assertionAudience 'endpoint': both JWTs name the token endpoint; the gateway accepts them", async () => {
    const spy = vi.spyOn(globalThis, 'fetch');
    try {
      const client = bearerClient({ assertionAudience: 'endpoint', dpop: true });
      const token = await client.jwtBearer({ sub: 'tel:+34600000001', scope: SIM_SWAP });
      expect(token.token_type.toLowerCase()).toBe('dpop');
      const [sent] = sentBodies(spy, '/apigateway/token');
      expect(decodeJwt(sent!.get('assertion')!).aud).toBe(`${issuer}/token`);
      expect(decodeJwt(sent!.get('client_assertion')!).aud).toBe(`${issuer}/token`);
    } finally {
      spy.mockRestore();
    }
  });

  it("an unknown subscriber: authorization_error invalid_grant with the gateway's description", async () => {
    const error = await rejection(bearerClient().jwtBearer({ sub: 'tel:+34699999999', scope: SIM_SWAP }));
    expect(error).toMatchObject({ kind: 'authorization_error', error: 'invalid_grant' });
    expect(error.message).toContain('no subscriber is known');
  });

  it('a client without privateKey: misconfigured, naming the option, nothing sent', async () => {
    const spy = vi.spyOn(globalThis, 'fetch');
    try {
      const client = serviceClient();
      await client.configuration();
      spy.mockClear();
      const error = await rejection(client.jwtBearer({ sub: 'tel:+34600000001', scope: SIM_SWAP }));
      expect(error.kind).toBe('misconfigured');
      expect(error.message).toContain('privateKey');
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe("assertionAudience 'endpoint' in the CAMARA client's other flows", () => {
  it('backend flow: the client assertions and the signed bc-authorize request name their endpoints', async () => {
    const spy = vi.spyOn(globalThis, 'fetch');
    try {
      const { approved } = camaraGw.hints;
      const token = await endpointApp.client.backchannel({ login_hint: approved, scope: camaraGw.scope });
      expect(token.scope).toBe(camaraGw.scope);
      const metadata = (await endpointApp.client.configuration()).serverMetadata();
      const [started] = sentBodies(spy, new URL(metadata.backchannel_authentication_endpoint!).pathname);
      expect(decodeJwt(started!.get('request')!).aud).toBe(metadata.backchannel_authentication_endpoint);
      expect(decodeJwt(started!.get('client_assertion')!).aud).toBe(metadata.backchannel_authentication_endpoint);
      const polls = sentBodies(spy, new URL(metadata.token_endpoint!).pathname);
      expect(polls.length).toBeGreaterThan(0);
      for (const poll of polls) expect(decodeJwt(poll.get('client_assertion')!).aud).toBe(metadata.token_endpoint);
    } finally {
      spy.mockRestore();
    }
  });

  it('frontend flow: the JAR request object names the authorization endpoint; the flow completes', async () => {
    const browser = new Browser();
    const started = await browser.request(`${endpointApp.url}/start`);
    const authorize = new URL(started.headers.get('location')!);
    const metadata = (await endpointApp.client.configuration()).serverMetadata();
    expect(decodeJwt(authorize.searchParams.get('request')!).aud).toBe(metadata.authorization_endpoint);
    const { res } = await browser.navigate(authorize);
    expect((await json(res)).token).toMatchObject({ scope: camaraGw.scope, expired: false });
  });

  it('an option other than issuer or endpoint is a TypeError at construction', () => {
    expect(() => bearerClient({ assertionAudience: 'token' as 'endpoint' })).toThrow(/assertionAudience/);
  });
});

describe('discovery', () => {
  it('a 404: misconfigured, naming the URL and the status', async () => {
    const gateway = `${server.url}/no-gateway-here`;
    const client = createNetAuthClient({ ...base, gateway, clientId: 'x', clientSecret: 'y' });
    const error = await rejection(client.clientCredentials({ scope: POPULATION }));
    expect(error).toMatchObject({ kind: 'misconfigured', status: 500 });
    expect(error.message).toContain(`${server.url}/no-gateway-here/.well-known/openid-configuration`);
    expect(error.message).toContain('HTTP 404');
  });

  it('a 404 at discoveryUrl: the same, naming that URL', async () => {
    const discoveryUrl = `${server.url}/.well-known/oauth-authorization-server/nowhere`;
    const client = createNetAuthClient({ ...base, discoveryUrl, clientId: 'x', clientSecret: 'y' });
    const error = await rejection(client.configuration());
    expect(error.kind).toBe('misconfigured');
    expect(error.message).toContain(`${discoveryUrl}: HTTP 404`);
  });
});

describeNoSecretsInErrors('grants', { errors: 5, secrets: 5 });
