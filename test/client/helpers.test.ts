/**
 * What application developers had to write by hand (issue 19), now in express-netauth/client, each against
 * this package's gateway and against node-oidc-provider over real HTTP: logout with RFC 7009 revocation,
 * requireToken(), the backend flow in two steps (and in another process) with a progress callback, a
 * discovery URL apart from the issuer, and the error for a missing express-session.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type express from 'express';
import * as oidc from 'openid-client';
import {
  createNetAuthClient,
  type NetAuthClientError,
  type BackchannelProgress,
  type GatewayEndpoints,
  type NetAuthClient,
} from '../../lib/client/index.js';
import { CAMARA_KEY, CAMARA_PUBLIC, GATEWAYS, type GatewayUnderTest } from '../helpers/client-gateways.js';
import {
  clientOptions,
  json,
  mountClientApp,
  rejection,
  startClientFixture,
  type ClientApp,
} from '../helpers/client-app.js';
import {
  describeNoSecretsInErrors,
  recordError,
  recordedErrors,
  rememberSecrets,
  watchSecrets,
} from '../helpers/client-secrets.js';
import { Browser } from '../helpers/browser.js';
import { SECRET } from '../helpers/gateway.js';

watchSecrets();
rememberSecrets(SECRET, CAMARA_KEY.d, CAMARA_KEY.p, CAMARA_KEY.q);

const RESUME = fileURLToPath(new URL('../helpers/resume-backchannel-main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Runs resumeBackchannel in a child process (a job-queue worker) and resolves with what it printed. */
function resumeInAnotherProcess(input: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', RESUME], {
      cwd: ROOT,
      env: { ...process.env, NETAUTH_RESUME: JSON.stringify(input) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', () => {
      try {
        resolve(JSON.parse(out) as Record<string, unknown>);
      } catch {
        reject(new Error(`the worker printed ${out}`));
      }
    });
  });
}

async function active(client: NetAuthClient, token: string): Promise<boolean> {
  return (await oidc.tokenIntrospection(await client.configuration(), token)).active;
}

describe.each(GATEWAYS)('app-side helpers, against $name', ({ name, start }) => {
  let gw: GatewayUnderTest;
  let app: ClientApp;
  /** The same registration, but the gateway's revocation endpoint does not answer. */
  let unrevocable: ClientApp;
  let base: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    let host: express.Express;
    ({ host, base, gw, app, close } = await startClientFixture(start, ['/unrevocable']));
    // The gateway's metadata as an API manager would publish it, apart from the issuer; and one naming another issuer.
    const metadata = (await (await fetch(`${gw.issuer}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    unrevocable = mountClientApp(host, base, '/unrevocable', gw, 'secret', {
      gateway: { ...metadata, revocation_endpoint: 'http://127.0.0.1:9/revoke' } as GatewayEndpoints,
    });
    host.get('/published/gateway.json', (_req, res) => void res.json(metadata));
    host.get(
      '/published/other.json',
      (_req, res) => void res.json({ ...metadata, issuer: 'https://other.example/as' }),
    );
    // An application that forgot express-session.
    const bare = createNetAuthClient(clientOptions(gw, `${base}/bare`, 'secret', { offset: 0 }));
    host.get('/bare/start', bare.start({ scope: gw.scope }));
    host.get('/bare/token', (req, res) => void res.json(bare.token(req) ?? null));
    host.use('/bare', ((error, _req, res, _next) => {
      recordError(error);
      res
        .status((error as NetAuthClientError).status ?? 500)
        .json({ kind: (error as NetAuthClientError).kind, message: (error as Error).message });
    }) as express.ErrorRequestHandler);
  });
  afterEach(() => {
    gw.tamperToken(undefined);
    app.clock.offset = 0;
  });
  afterAll(() => close());

  describe('logout() and revoke()', () => {
    it('logout revokes the token at the gateway (RFC 7009) and clears the session', async () => {
      const browser = new Browser();
      const signedIn = await json((await browser.navigate(`${app.url}/start`)).res);
      const token = (signedIn.token as { access_token: string }).access_token;
      expect(await active(app.client, token)).toBe(true);

      const out = await browser.request(`${app.url}/logout`, { method: 'POST' });
      expect(out.status).toBe(302);
      expect(out.headers.get('location')).toBe('/app/me');
      const after = await json(await browser.request(`${app.url}/me`));
      expect(after.token).toBeNull();
      expect(after.sessionId).not.toBe(signedIn.sessionId);
      expect(await active(app.client, token)).toBe(false);
      expect((await fetch(gw.serviceApi, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    });

    it('logout with the revocation endpoint down: the session is cleared all the same, then 503 "unavailable" says so', async () => {
      const browser = new Browser();
      const signedIn = await json((await browser.navigate(`${unrevocable.url}/start`)).res);
      expect(signedIn.token).not.toBeNull();
      const out = await browser.request(`${unrevocable.url}/logout`, { method: 'POST' });
      expect(out.status).toBe(503);
      expect((await json(out)).kind).toBe('unavailable');
      expect(String((recordedErrors().at(-1) as Error).message)).toMatch(/session was cleared/);
      expect((await json(await browser.request(`${unrevocable.url}/me`))).token).toBeNull();
    });

    it('logout without a token just clears the session', async () => {
      const out = await new Browser().request(`${app.url}/logout`, { method: 'POST' });
      expect(out.status).toBe(302);
    });

    it('revoke() revokes a backend-flow token', async () => {
      const token = await app.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
      expect(await active(app.client, token.access_token)).toBe(true);
      await app.client.revoke(token.access_token);
      expect(await active(app.client, token.access_token)).toBe(false);
    });
  });

  describe('requireToken()', () => {
    it('without a token: runs the flow and comes back to the same URL; then uses the session token', async () => {
      const browser = new Browser();
      const { res, url } = await browser.navigate(`${app.url}/protected?item=7`);
      expect(url.href).toBe(`${app.url}/protected?item=7`);
      const body = await json(res);
      expect(body.route).toBe('/app/protected?item=7');
      expect(body.token).toMatchObject({ scope: gw.scope, expired: false });
      // Second visit: no redirect, the session's token is used.
      const again = await browser.request(`${app.url}/protected?item=8`);
      expect(again.status).toBe(200);
      expect((await json(again)).token).toEqual(body.token);
      // The service API takes it.
      expect((await browser.request(`${app.url}/api`)).status).toBe(200);
    });

    it('an expired token: GET starts the flow again, POST is 401 token_expired', async () => {
      const browser = new Browser();
      await (await browser.navigate(`${app.url}/protected`)).res.body?.cancel();
      app.clock.offset = 2 * 3600_000;
      const get = await browser.request(`${app.url}/protected`);
      expect(get.status).toBe(302);
      expect(get.headers.get('location')!.startsWith(gw.issuer.replace(/\/[^/]*$/, ''))).toBe(true);
      const post = await browser.request(`${app.url}/protected`, { method: 'POST' });
      expect(post.status).toBe(401);
      expect((await json(post)).kind).toBe('token_expired');
    });

    it('POST without a token: 401 no_token, no redirect (a POST cannot be replayed after one)', async () => {
      const res = await new Browser().request(`${app.url}/protected`, { method: 'POST' });
      expect(res.status).toBe(401);
      expect(await json(res)).toMatchObject({ kind: 'no_token', token: null });
    });

    it('a gateway granting less than the route requires: 403 denied, nothing stored, no redirect loop', async () => {
      gw.tamperToken((body) => {
        body.scope = 'dpv:Marketing#something-else';
      });
      const browser = new Browser();
      const { res } = await browser.navigate(`${app.url}/protected`);
      expect(res.status).toBe(403);
      expect(await json(res)).toMatchObject({ kind: 'denied', token: null });
    });
  });

  describe('the backend flow in two steps (job queues) and its progress callback', () => {
    it('start returns auth_req_id, expires_in, interval; another client instance polls until approved', async () => {
      const started = await app.client.startBackchannel({ login_hint: gw.hints.held, scope: gw.scope });
      expect(started).toMatchObject({
        auth_req_id: expect.any(String),
        expires_in: expect.any(Number),
        interval: 1,
        scope: gw.scope,
      });
      expect(started.expires_at).toBeGreaterThan(Date.now());
      // What a queue would store, read back by a worker with its own client.
      const stored = JSON.parse(JSON.stringify(started)) as typeof started;
      const worker = createNetAuthClient(clientOptions(gw, app.url, 'secret', { offset: 0 }));
      await sleep(stored.interval * 1000);
      const first = await worker.pollBackchannel(stored);
      expect(first).toMatchObject({ status: 'pending', slow_down: false });
      if (first.status !== 'pending') throw new Error('unreachable');
      expect(first.retry_after).toBeGreaterThanOrEqual(1);
      await gw.approve(stored.auth_req_id);
      await sleep(first.retry_after * 1000);
      const second = await worker.pollBackchannel(first.request);
      expect(second.status).toBe('approved');
      if (second.status !== 'approved') throw new Error('unreachable');
      expect(second.token.scope).toBe(gw.scope);
      expect(
        (await fetch(gw.serviceApi, { headers: { authorization: `Bearer ${second.token.access_token}` } })).status,
      ).toBe(200);
      // The request is used up: polling again is refused as a bad request, not a gateway failure; by this gateway
      // only after lifetimes.redemptionRetry (30 s): within it the same client's retry gets the same token again.
      await sleep(1000);
      if (name === 'express-netauth') {
        const retried = await worker.pollBackchannel(first.request);
        expect(retried.status === 'approved' && retried.token.access_token).toBe(second.token.access_token);
      } else {
        const again = await rejection(worker.pollBackchannel(first.request));
        expect(again.status).toBeLessThan(500);
      }
    });

    it('resumeBackchannel in another process gets the token', async () => {
      const started = await app.client.startBackchannel({ login_hint: gw.hints.held, scope: gw.scope });
      const worker = resumeInAnotherProcess({
        options: { ...clientOptions(gw, app.url, 'secret', { offset: 0 }), now: undefined },
        request: started,
      });
      await gw.approve(started.auth_req_id);
      const outcome = await worker;
      const token = outcome.token as { access_token: string; scope: string };
      expect(token.scope).toBe(gw.scope);
      expect(await active(app.client, token.access_token)).toBe(true);
    });

    it('a denied request: the poll throws "denied"', async () => {
      const started = await app.client.startBackchannel({ login_hint: gw.hints.held, scope: gw.scope });
      await gw.deny(started.auth_req_id);
      await sleep(started.interval * 1000);
      const error = await rejection(app.client.pollBackchannel(started));
      expect(error).toMatchObject({ kind: 'denied', error: 'access_denied', status: 403 });
    });

    it('a request past its expires_at is "expired" without asking the gateway', async () => {
      const started = await app.client.startBackchannel({ login_hint: gw.hints.held, scope: gw.scope });
      app.clock.offset = (started.expires_in + 1) * 1000;
      const error = await rejection(app.client.pollBackchannel(started));
      expect(error.kind).toBe('expired');
    });

    it('the one-call form reports progress: started (with the request to persist), then each pending poll', async () => {
      const events: BackchannelProgress[] = [];
      const token = await app.client.backchannel({
        login_hint: gw.hints.held,
        scope: gw.scope,
        onProgress: (progress) => {
          events.push(progress);
          if (progress.status === 'pending' && progress.polls === 1) void gw.approve(progress.request.auth_req_id);
        },
      });
      expect(token.scope).toBe(gw.scope);
      expect(events[0]).toMatchObject({
        status: 'started',
        polls: 0,
        request: { auth_req_id: expect.any(String), interval: 1 },
      });
      expect(events[1]).toMatchObject({ status: 'pending', polls: 1 });
      expect(events.every((e) => e.request.auth_req_id === events[0]!.request.auth_req_id)).toBe(true);
    });

    it('a wrong client secret is "misconfigured" (500): invalid_client is this application\'s fault, not the gateway\'s', async () => {
      const wrong = createNetAuthClient({
        ...clientOptions(gw, app.url, 'secret', { offset: 0 }),
        clientSecret: 'not-the-registered-secret',
      });
      const error = await rejection(wrong.startBackchannel({ login_hint: gw.hints.approved, scope: gw.scope }));
      expect(error).toMatchObject({ kind: 'misconfigured', error: 'invalid_client', status: 500 });
    });

    it('an unknown login_hint is "unknown_subscriber" (404), not a gateway failure', async () => {
      const error = await rejection(app.client.startBackchannel({ login_hint: gw.hints.unknown, scope: gw.scope }));
      expect(error).toMatchObject({ kind: 'unknown_subscriber', error: 'unknown_user_id', status: 404 });
    });
  });

  describe('a discovery URL apart from the issuer', () => {
    it('metadata published elsewhere: discovered there, the issuer still checked, the flows work', async () => {
      const client = createNetAuthClient({
        ...clientOptions(gw, app.url, 'secret', { offset: 0 }),
        discoveryUrl: `${base}/published/gateway.json`,
      });
      const config = await client.configuration();
      expect(config.serverMetadata().issuer).toBe(gw.issuer);
      const token = await client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
      expect(await active(client, token.access_token)).toBe(true);
    });

    it('an http: gateway without allowInsecureRequests: "misconfigured", naming the option', async () => {
      const client = createNetAuthClient({
        ...clientOptions(gw, app.url, 'secret', { offset: 0 }),
        allowInsecureRequests: false,
      });
      const error = await rejection(client.startBackchannel({ login_hint: gw.hints.approved, scope: gw.scope }));
      expect(error).toMatchObject({ kind: 'misconfigured', status: 500 });
      expect(error.message).toContain('allowInsecureRequests');
    });

    it('a document naming another issuer: "misconfigured" (500), saying which option to fix', async () => {
      const client = createNetAuthClient({
        ...clientOptions(gw, app.url, 'secret', { offset: 0 }),
        discoveryUrl: `${base}/published/other.json`,
      });
      const error = await rejection(client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope }));
      expect(error).toMatchObject({ kind: 'misconfigured', status: 500 });
      expect(error.message).toContain('set the option gateway');
    });
  });

  it('without express-session: "misconfigured" (500) at the first request, naming the fix', async () => {
    for (const path of ['/bare/start', '/bare/token']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(500);
      const body = await json(res);
      expect(body.kind).toBe('misconfigured');
      expect(body.message).toMatch(/express-session/);
      expect(body.message).toContain('app.use(session(');
    }
  });
});

describe('options that cannot work fail at start-up, naming the option', () => {
  const base = { gateway: 'https://gw.example/apigateway', clientId: 'app-1' };
  const publicJwk = CAMARA_PUBLIC;

  it.each([
    ['neither clientSecret nor privateKey', { ...base }, /exactly one of clientSecret .* and privateKey/],
    ['both', { ...base, clientSecret: 's', privateKey: CAMARA_KEY }, /exactly one of clientSecret/],
    [
      'signedRequests with a secret',
      { ...base, clientSecret: 's', signedRequests: true },
      /signedRequests needs privateKey/,
    ],
    ['a public key as privateKey', { ...base, privateKey: publicJwk }, /PRIVATE JWK/],
    [
      'a key with no known algorithm',
      { ...base, privateKey: { kty: 'oct', k: 'c2VjcmV0', d: 'x' } },
      /no JWS algorithm/,
    ],
    [
      'discoveryUrl with explicit endpoints',
      {
        ...base,
        gateway: { issuer: 'https://gw.example', token_endpoint: 'https://gw.example/token' },
        clientSecret: 's',
        discoveryUrl: 'https://x.example/m',
      },
      /discoveryUrl/,
    ],
    [
      'a gateway that is not a URL: it has no scheme',
      { ...base, gateway: 'gw.example', clientSecret: 's' },
      /^createNetAuthClient: gateway "gw\.example" has no scheme: write it with https:\/\//,
    ],
    // Issue 44: it parses (scheme `localhost:`), and was later "not on https" although allowInsecureRequests is set.
    [
      'a gateway host:port without a scheme, with allowInsecureRequests: it has no scheme',
      { ...base, gateway: 'localhost:3000/apigateway', clientSecret: 's', allowInsecureRequests: true },
      /^createNetAuthClient: gateway "localhost:3000\/apigateway" has no scheme/,
    ],
    [
      'a gateway on another scheme',
      { ...base, gateway: 'ftp://gw.example', clientSecret: 's' },
      /gateway must be an https: URL \(http: for development\), not ftp:/,
    ],
  ])('%s', (_name, options, message) => {
    let thrown: unknown;
    try {
      createNetAuthClient(options as Parameters<typeof createNetAuthClient>[0]);
    } catch (error) {
      thrown = error;
      recordError(error);
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as Error).message).toMatch(message);
  });

  it('start(), callback() and requireToken() need redirectUri', () => {
    const client = createNetAuthClient({ ...base, clientSecret: 's' });
    expect(() => client.start({ scope: 'x' })).toThrow(/redirectUri/);
    expect(() => client.callback()).toThrow(/redirectUri/);
    expect(() => client.requireToken({ scope: 'x' })).toThrow(/redirectUri/);
  });
});

describeNoSecretsInErrors('helpers', { errors: 20, secrets: 20 });
