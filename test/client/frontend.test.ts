import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler, type Express } from 'express';
import session from 'express-session';
import { createNetAuth, type NetAuth } from '../../lib/index.js';
import { createNetAuthClient, NetAuthClientError, type NetAuthClient } from '../../lib/client/index.js';
import { CLIENTS, POLICY, SECRET, SUBSCRIBERS, SIM_SWAP, LOCATION } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';
import { Browser, consentFormOf } from '../helpers/browser.js';
import { startGatewayProcess, stopGatewayProcesses, type GatewayProcess } from '../helpers/gateway-process.js';
import { describeNoSecretsInErrors, recordError, rememberSecrets, watchSecrets } from '../helpers/client-secrets.js';

watchSecrets();
rememberSecrets(SECRET);

/** Mounts an application backend (express-session + the companion) on `app` under `prefix`. */
function mountApplication(
  app: Express,
  prefix: string,
  client: NetAuthClient,
  gateway: () => string,
  returnTo: string | ((req: express.Request) => string | undefined) = `${prefix}/done`,
): void {
  const router = express.Router();
  router.use(
    session({
      secret: 'test-session-secret',
      resave: false,
      saveUninitialized: false,
      name: `sid${prefix.replace(/\W/g, '')}`,
    }),
  );
  router.get(
    '/verify',
    client.start({
      scope: (req) => (typeof req.query.scope === 'string' ? req.query.scope : SIM_SWAP),
      login_hint: (req) => (typeof req.query.hint === 'string' ? req.query.hint : undefined),
      data: (req) => ({ phoneNumber: req.query.phone ?? null }),
      returnTo,
      prompt: (req) => (req.query.prompt === 'consent' ? 'consent' : undefined),
    }),
  );
  router.get('/remember', (req, res) => {
    (req.session as unknown as Record<string, unknown>).cart = req.query.item;
    res.json({ ok: true });
  });
  router.get('/callback', client.callback());
  router.get('/done', async (req, res) => {
    const token = client.token(req);
    // The service API that matches the granted scope.
    const api = await client.fetch(
      req,
      `${gateway()}${token?.scope?.includes('device-location') ? '/location' : '/sim-swap/check'}`,
      { method: 'POST' },
    );
    res.json({ token, api: await api.json(), sessionId: req.sessionID });
  });
  router.get(
    '/whoami',
    (req, res) =>
      void res.json({
        sessionId: req.sessionID,
        token: client.token(req) ?? null,
        cart: (req.session as unknown as Record<string, unknown>).cart ?? null,
      }),
  );
  const errors: ErrorRequestHandler = (error, req, res, _next) => {
    recordError(error);
    if (!(error instanceof NetAuthClientError)) throw error;
    res.status(error.status).json({ kind: error.kind, error: error.error ?? null, token: client.token(req) ?? null });
  };
  router.use(errors);
  app.use(prefix, router);
}

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

describe('app side: gateway router and companion in one app', () => {
  let base: string;
  let close: () => Promise<void>;
  let netauth: NetAuth;

  beforeAll(async () => {
    const app = express();
    // The app's proxy in front of /proxied rewrites protocol and host; the gateway trusts loopback.
    app.set('trust proxy', 'loopback');
    const server = await listen(app);
    base = server.url;
    close = server.close;
    const clients = [
      { ...CLIENTS[0]!, redirectUris: [...CLIENTS[0]!.redirectUris!, `${base}/app/callback`, `${base}/open/callback`] },
      ...CLIENTS.slice(1),
    ];
    netauth = createNetAuth({
      issuer: `${base}/apigateway`,
      clients,
      subscribers: SUBSCRIBERS.map((s) =>
        s.id === 'sub-alice' ? { ...s, addresses: [...s.addresses!, '127.0.0.1'] } : s,
      ),
      consentPolicy: POLICY,
      network: { mobileRanges: ['127.0.0.0/8', '10.20.0.0/16'] },
    });
    app.use('/apigateway', netauth.router);
    app.post(
      '/sim-swap/check',
      netauth.guard({ scope: 'sim-swap' }),
      (req, res) => void res.json({ subscriber: req.netauth?.subscriber.id }),
    );
    app.post(
      '/location',
      netauth.guard({ scope: 'device-location' }),
      (req, res) => void res.json({ subscriber: req.netauth?.subscriber.id }),
    );
    const common = {
      gateway: `${base}/apigateway`,
      clientId: 'app-1',
      clientSecret: SECRET,
      allowInsecureRequests: true,
    };
    mountApplication(app, '/app', createNetAuthClient({ ...common, redirectUri: `${base}/app/callback` }), () => base);
    // returnTo taken from the request, as a careless application would: only same-origin paths may be used.
    mountApplication(
      app,
      '/open',
      createNetAuthClient({ ...common, redirectUri: `${base}/open/callback`, successRedirect: '/open/done' }),
      () => base,
      (req) => (typeof req.query.next === 'string' ? req.query.next : undefined),
    );
    // Registered as the public URL; the proxy forwards https://app.example/callback to /proxied/callback.
    mountApplication(
      app,
      '/proxied',
      createNetAuthClient({ ...common, redirectUri: 'https://app.example/callback' }),
      () => base,
    );
  });

  afterAll(async () => {
    await close();
    await netauth.close();
  });

  it('runs the full frontend flow: token and application data in the session, service API call succeeds', async () => {
    const browser = new Browser();
    const before = await json(await browser.request(`${base}/app/whoami`));
    const { res } = await browser.navigate(`${base}/app/verify?phone=%2B34600000001`);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.api).toEqual({ subscriber: 'sub-alice' });
    const token = body.token as Record<string, unknown>;
    expect(token).toMatchObject({
      token_type: 'bearer',
      scope: SIM_SWAP,
      expired: false,
      data: { phoneNumber: '+34600000001' },
    });
    // The authenticated session got a new id (no fixation).
    expect(body.sessionId).not.toBe(before.sessionId);
  });

  it("keeps the application's own session data across the session regeneration", async () => {
    const browser = new Browser();
    await (await browser.request(`${base}/app/remember?item=book`)).body?.cancel();
    const before = await json(await browser.request(`${base}/app/whoami`));
    expect(before.cart).toBe('book');
    await (await browser.navigate(`${base}/app/verify`)).res.body?.cancel();
    const after = await json(await browser.request(`${base}/app/whoami`));
    expect(after.cart).toBe('book');
    expect(after.sessionId).not.toBe(before.sessionId);
    expect(after.token).not.toBeNull();
  });

  it('prompt=consent shows the consent page again although consent is on record', async () => {
    await netauth.consent.grant({ clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION });
    const silent = await new Browser().navigate(`${base}/app/verify?scope=${encodeURIComponent(LOCATION)}`);
    expect(silent.res.headers.get('content-type')).toMatch(/json/);
    await silent.res.body?.cancel();
    const asked = await new Browser().navigate(
      `${base}/app/verify?scope=${encodeURIComponent(LOCATION)}&prompt=consent`,
    );
    expect(asked.url.pathname).toBe('/apigateway/consent');
    expect(await asked.res.text()).toContain('Allow');
  });

  it('keeps application data out of the URL by default', async () => {
    const browser = new Browser();
    const { res, url } = await browser.navigate(
      `${base}/app/verify?phone=%2B34600000001`,
      (next) => next.pathname === '/app/callback',
    );
    await res.body?.cancel();
    expect(url.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(url.href).not.toContain('34600000001');
  });

  it('drives the consent page (allow) and then holds a consent-scoped token', async () => {
    await netauth.consent.revoke({ clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION });
    const browser = new Browser();
    const page = await browser.navigate(`${base}/app/verify?scope=${encodeURIComponent(LOCATION)}`);
    expect(page.res.status).toBe(200);
    const form = consentFormOf(await page.res.text());
    const answer = await browser.request(new URL(form.action, page.url), {
      form: { ...form.fields, decision: 'allow' },
    });
    expect(answer.status).toBe(303);
    const { res } = await browser.navigate(new URL(answer.headers.get('location')!, page.url));
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.api).toEqual({ subscriber: 'sub-alice' });
    expect((body.token as Record<string, unknown>).scope).toBe(LOCATION);
  });

  it('a denied consent reaches the error handler as "denied" and stores nothing', async () => {
    // The previous test's consent would skip the page.
    await netauth.consent.revoke({ clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION });
    const browser = new Browser();
    const page = await browser.navigate(`${base}/app/verify?scope=${encodeURIComponent(LOCATION)}`);
    const form = consentFormOf(await page.res.text());
    const answer = await browser.request(new URL(form.action, page.url), {
      form: { ...form.fields, decision: 'deny' },
    });
    const { res } = await browser.navigate(new URL(answer.headers.get('location')!, page.url));
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual({ kind: 'denied', error: 'access_denied', token: null });
    expect((await json(await browser.request(`${base}/app/whoami`))).token).toBeNull();
  });

  it('a device off the mobile network (WiFi) is "not_on_mobile_network"', async () => {
    const browser = new Browser();
    const { res, url } = await browser.navigate(
      `${base}/app/verify`,
      (next) => next.pathname === '/apigateway/authorize',
    );
    await res.body?.cancel();
    // The operator's edge reports the WiFi address the request really came from.
    const redirect = await browser.request(url, { headers: { 'X-Forwarded-For': '192.0.2.7' } });
    const { res: result } = await browser.navigate(new URL(redirect.headers.get('location')!));
    expect(await json(result)).toEqual({ kind: 'not_on_mobile_network', error: 'access_denied', token: null });
  });

  it('a login_hint naming another line is "denied"; other authorization errors are "authorization_error"', async () => {
    const denied = await new Browser().navigate(`${base}/app/verify?hint=${encodeURIComponent('tel:+34600000002')}`);
    expect(await json(denied.res)).toMatchObject({ kind: 'denied', error: 'access_denied' });
    const unregistered = await new Browser().navigate(
      `${base}/app/verify?scope=${encodeURIComponent('dpv:FraudPreventionAndDetection#unknown')}`,
    );
    expect(await json(unregistered.res)).toMatchObject({ kind: 'authorization_error', error: 'invalid_scope' });
  });

  it('rejects a wrong, a missing and a replayed state, storing nothing', async () => {
    const browser = new Browser();
    const { res, url } = await browser.navigate(`${base}/app/verify`, (next) => next.pathname === '/app/callback');
    await res.body?.cancel();
    const wrong = new URL(url);
    wrong.searchParams.set('state', 'forged');
    expect(await json(await browser.request(wrong))).toEqual({ kind: 'state_mismatch', error: null, token: null });
    const missing = new URL(url);
    missing.searchParams.delete('state');
    expect((await json(await browser.request(missing))).kind).toBe('state_mismatch');
    // The genuine callback still works once (the forged ones did not burn the code or the state)…
    const ok = await browser.navigate(url);
    expect(ok.res.status).toBe(200);
    // …and only once.
    expect((await json(await browser.request(url))).kind).toBe('state_mismatch');
  });

  // RFC 9700 §4.4 (mix-up) / RFC 9207: the gateway advertises authorization_response_iss_parameter_supported,
  // so the callback must carry this gateway's iss; another issuer's, or none, is refused.
  it('rejects an authorization response with another iss, or none (mix-up defence), storing nothing', async () => {
    for (const iss of ['https://evil.example', undefined]) {
      const browser = new Browser();
      const { res, url } = await browser.navigate(`${base}/app/verify`, (next) => next.pathname === '/app/callback');
      await res.body?.cancel();
      expect(url.searchParams.get('iss')).toBe(`${base}/apigateway`);
      const forged = new URL(url);
      if (iss === undefined) forged.searchParams.delete('iss');
      else forged.searchParams.set('iss', iss);
      // openid-client's RFC 9207 check fails before any code exchange; nothing lands in the session. A bad
      // callback, not a failing gateway: 400.
      const answer = await browser.request(forged);
      expect(answer.status).toBe(400);
      expect(await json(answer)).toEqual({ kind: 'invalid_callback', error: null, token: null });
    }
  });

  // RFC 9700 §4.11.1: the client must not be an open redirector, even when the application passes returnTo from the request.
  it.each(['https://evil.example/', '//evil.example/', '/\\evil.example/', 'javascript:alert(1)'])(
    'a returnTo of %s is not followed: the callback goes to successRedirect',
    async (next) => {
      const browser = new Browser();
      const { res, url } = await browser.navigate(
        `${base}/open/verify?next=${encodeURIComponent(next)}`,
        (hop) => hop.pathname === '/open/callback',
      );
      await res.body?.cancel();
      const answer = await browser.request(url);
      expect(answer.status).toBe(302);
      expect(answer.headers.get('location')).toBe('/open/done');
    },
  );

  it('a same-origin returnTo path is followed', async () => {
    const browser = new Browser();
    const { res, url } = await browser.navigate(
      `${base}/open/verify?next=${encodeURIComponent('/open/whoami')}`,
      (hop) => hop.pathname === '/open/callback',
    );
    await res.body?.cancel();
    expect((await browser.request(url)).headers.get('location')).toBe('/open/whoami');
  });

  it('a callback from another browser (no session) is a state mismatch', async () => {
    const { res, url } = await new Browser().navigate(
      `${base}/app/verify`,
      (next) => next.pathname === '/app/callback',
    );
    await res.body?.cancel();
    expect((await json(await new Browser().request(url))).kind).toBe('state_mismatch');
  });

  it('behind a proxy that rewrites protocol and host, the callback still redeems the code', async () => {
    const browser = new Browser();
    const { res, url } = await browser.navigate(`${base}/proxied/verify`, (next) => next.host === 'app.example');
    await res.body?.cancel();
    expect(url.origin + url.pathname).toBe('https://app.example/callback');
    // The proxy forwards https://app.example/callback to the app, rewriting what the app sees.
    const forwarded = new URL(`${base}/proxied/callback${url.search}`);
    const callback = await browser.request(forwarded, {
      headers: { 'X-Forwarded-Proto': 'http', 'X-Forwarded-Host': 'internal.lan:8080' },
    });
    expect(callback.status).toBe(302);
    const done = await browser.navigate(new URL(callback.headers.get('location')!, base));
    expect((await json(done.res)).api).toEqual({ subscriber: 'sub-alice' });
  });
});

describe('app side: gateway and application in two processes', () => {
  let gateway: GatewayProcess;
  let app: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    const application = express();
    app = await listen(application);
    gateway = await startGatewayProcess('app-side', {
      NETAUTH_LOOPBACK: '1',
      REDIS_URL: '',
      NETAUTH_CLIENTS: JSON.stringify([{ ...CLIENTS[0]!, redirectUris: [`${app.url}/app/callback`] }]),
    });
    const client = createNetAuthClient({
      gateway: `${gateway.url}/apigateway`,
      clientId: 'app-1',
      clientSecret: SECRET,
      redirectUri: `${app.url}/app/callback`,
      allowInsecureRequests: true,
    });
    mountApplication(application, '/app', client, () => gateway.url);
    application.get('/backend', async (_req, res) => {
      const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
      const api = await fetch(`${gateway.url}/sim-swap/check`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token.access_token}` },
      });
      res.json(await api.json());
    });
  });

  afterAll(async () => {
    await app?.close();
    await stopGatewayProcesses();
  });

  it('frontend flow across processes: the token lands in the session and the service API accepts it', async () => {
    const { res } = await new Browser().navigate(`${app.url}/app/verify`);
    expect(res.status).toBe(200);
    expect((await json(res)).api).toEqual({ swapped: false, subscriber: 'sub-alice' });
  });

  it('backend flow across processes', async () => {
    const res = await fetch(`${app.url}/backend`);
    expect(await res.json()).toEqual({ swapped: false, subscriber: 'sub-alice' });
  });
});

describeNoSecretsInErrors('frontend', { errors: 10, secrets: 10 });
