/**
 * The sample application: a web app that uses the operator's network APIs through express-netauth/client.
 * - "Verify my number": the frontend flow (start → operator → callback), then number verification.
 * - "Check for a SIM swap": the backend flow (CIBA poll mode) in the background, with a self-refreshing
 *   status page while the subscriber answers on their phone.
 * Registered with `private_key_jwt` (the default), it is a CAMARA-profile client: it generates its key pair at
 * start, publishes the public key at `/jwks.json` (the gateway's registration points there), authenticates
 * with signed client assertions and sends its authorization requests signed.
 */
import { randomBytes } from 'node:crypto';
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import session from 'express-session';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { createNetAuthClient, NetAuthClientError, type NetAuthClientErrorKind } from '../lib/client/index.js';
import { APP_JWKS_PATH, type DemoConfig } from './config.js';
import { cookies, createCsrf, setCookie } from './csrf.js';
import { findDevice, simulatedDevices } from './network.js';
import { html, logoSvg, maskToken, sendPage, spacedNumber, type Brand, type Html } from './pages.js';

export interface ApplicationOptions {
  appUrl: string;
  gatewayUrl: string;
  issuer: string;
  /** express-session store; default: express-session's MemoryStore. */
  sessionStore?: session.Store;
}

export interface Application {
  app: express.Express;
  close(): void;
}

/**
 * The application's key pair (ES256): the private half signs its client assertions and request objects and
 * never leaves the app; the public half is its JWK Set. A new one each start, as nothing outlives the demo.
 */
async function generateSigningKey(): Promise<{ privateJwk: JWK; jwks: { keys: JWK[] } }> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256' },
    jwks: { keys: [{ ...publicJwk, kid, alg: 'ES256', use: 'sig' }] },
  };
}

const E164 = /^\+[1-9][0-9]{4,14}$/;
/** The app's note of the simulated device (the gateway's cookie is the truth; this is for display). */
const DEVICE_NOTE = 'demo_app_device';

/** A SIM swap check running in the background (backend flow). */
interface Job {
  id: string;
  phoneNumber: string;
  startedAt: number;
  status: 'waiting' | 'done' | 'failed';
  swapped?: boolean;
  token?: { masked: string; scope: string | undefined; expiresAt: number | undefined };
  failure?: Failure;
  abort: AbortController;
}

interface Failure {
  title: string;
  text: string;
  code?: string;
  /** Offer the device picker (not on the mobile network). */
  device?: boolean;
}

const FAILURES: Record<NetAuthClientErrorKind, { title: string; text: string }> = {
  denied: {
    title: 'Consent was not given',
    text: 'The subscriber said no (or the operator does not allow this request), so the operator shared nothing with this app.',
  },
  not_on_mobile_network: {
    title: 'Your phone is not on the mobile network',
    text: 'The operator recognises your number from the mobile connection itself, and this device is on WiFi, so it could not be identified. Switch to a mobile line and try again.',
  },
  invalid_callback: {
    title: 'This answer could not be used',
    text: "The operator's answer was not valid for this request: it was already used, expired, or did not come from the operator. Start again from the home page.",
  },
  misconfigured: {
    title: 'The app is not set up correctly',
    text: 'The app could not talk to the operator as configured.',
  },
  state_mismatch: {
    title: 'This answer does not belong to this browser session',
    text: "The operator's answer did not match a request started here: it was already used, or it comes from another tab or browser. Start again from the home page.",
  },
  consent_required: { title: 'Consent is needed', text: 'The operator needs the subscriber to agree first.' },
  unknown_subscriber: {
    title: 'The operator does not know this number',
    text: 'No subscriber of this operator has that phone number.',
  },
  authorization_error: {
    title: 'The operator refused the request',
    text: 'The operator could not accept the request as it was sent.',
  },
  token_error: {
    title: 'The operator did not issue a token',
    text: 'Exchanging the answer for an access token failed.',
  },
  expired: {
    title: 'The request expired',
    text: 'The subscriber did not answer in time, so the operator closed the request.',
  },
  no_token: { title: 'Not verified yet', text: 'Start the verification first.' },
  token_expired: { title: 'Your verification has expired', text: 'The access token has expired: verify again.' },
  unavailable: {
    title: 'The operator is not reachable',
    text: 'The operator gateway could not be reached or is busy. Try again in a moment.',
  },
  aborted: { title: 'Cancelled', text: 'The request was cancelled.' },
};

function failureOf(error: unknown): Failure {
  if (error instanceof NetAuthClientError) {
    const base = FAILURES[error.kind];
    return {
      ...base,
      ...(error.error ? { code: error.error } : {}),
      ...(error.kind === 'not_on_mobile_network' ? { device: true } : {}),
    };
  }
  if (error instanceof ApiError && error.status === 401) {
    return {
      title: 'The operator refused the token',
      text: 'The access token no longer works: the subscriber withdrew the consent it rested on, or it was revoked or expired. Verify again.',
      code: 'HTTP 401',
    };
  }
  if (error instanceof ApiError)
    return { title: 'The network API answered with an error', text: error.message, code: `HTTP ${error.status}` };
  return { title: 'Something went wrong', text: 'The app could not complete the request.' };
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function apiJson(res: globalThis.Response): Promise<Record<string, unknown>> {
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok)
    throw new ApiError(res.status, typeof body.message === 'string' ? body.message : `the API answered ${res.status}`);
  return body;
}

export async function createApplication(config: DemoConfig, options: ApplicationOptions): Promise<Application> {
  const { appUrl, gatewayUrl } = options;
  const registration = config.clients.find((c) => c.clientId === config.app.clientId)!;
  const appName = registration.name ?? registration.clientId;
  const scopes = config.app.scopes;
  const camara = registration.tokenEndpointAuthMethod === 'private_key_jwt';
  const key = camara ? await generateSigningKey() : undefined;
  const client = createNetAuthClient({
    gateway: options.issuer,
    clientId: registration.clientId,
    // CAMARA profile: private_key_jwt at every endpoint, and signed requests (JAR, signed bc-authorize).
    ...(key ? { privateKey: key.privateJwk, signedRequests: true } : { clientSecret: registration.clientSecret! }),
    redirectUri: `${appUrl}/callback`,
    allowInsecureRequests: true, // the demo runs on http://localhost
    // Sender-constrained tokens (RFC 9449): every token is bound to this process's key, and every API call proves it.
    dpop: true,
  });
  const brand: Brand = { name: appName, role: 'Sample application · demo', color: '#0f5e5a', textColor: '#ffffff' };
  const gatewayOrigin = new URL(gatewayUrl).origin;
  const csrf = createCsrf('demo_app_csrf');
  const jobs = new Map<string, Job>();
  const phonePage = (phone: string) => `${gatewayUrl}/demo/phone/${phone.slice(1)}`;
  const deviceOf = (req: Request) => findDevice(config, cookies(req)[DEVICE_NOTE]);
  const defaultNumber = config.subscribers[0]!.phoneNumber;
  const footer = html`The operator: <a href="${gatewayUrl}/">${config.operator.name} gateway</a> · issuer <code>${options.issuer}</code>`;

  const app = express();
  app.disable('x-powered-by');
  if (key) {
    // Before the session: the gateway fetches it with no cookie, and it is public.
    app.get(APP_JWKS_PATH, (_req, res) => {
      res.type('application/jwk-set+json').set('Cache-Control', 'public, max-age=300').send(JSON.stringify(key.jwks));
    });
  }
  app.use(
    session({
      name: 'demo.app.sid',
      secret: randomBytes(32).toString('base64url'),
      resave: false,
      saveUninitialized: false,
      cookie: { httpOnly: true, sameSite: 'lax', path: '/', maxAge: 3600_000 },
      ...(options.sessionStore ? { store: options.sessionStore } : {}),
    }),
  );
  const form = express.urlencoded({ extended: false, limit: '4kb' });

  app.get('/favicon.ico', (_req, res) => {
    res.type('image/svg+xml').set('Cache-Control', 'public, max-age=3600').send(logoSvg(brand.textColor, brand.color));
  });

  function page(res: Response, title: string, body: Html, extra: { status?: number; refresh?: number } = {}): void {
    // The "verify" form is answered with a redirect to the gateway: form-action must allow it.
    sendPage(res, { title, brand, body, formTargets: [gatewayOrigin], footer, ...extra });
  }

  function failurePage(res: Response, status: number, failure: Failure): void {
    page(
      res,
      failure.title,
      html`<section class="card bad" aria-labelledby="h-fail"><h1 id="h-fail">${failure.title}</h1>
<p>${failure.text}</p>
${failure.code ? html`<p class="muted">Error code: <code>${failure.code}</code></p>` : ''}
<div class="actions">${failure.device ? html`<a class="button" href="${deviceLink()}">Change the simulated device</a>` : ''}<a class="button secondary" href="/">Back to ${appName}</a></div></section>`,
      { status },
    );
  }

  const deviceLink = () => `${gatewayUrl}/demo/device?return=${encodeURIComponent(`${appUrl}/`)}`;

  /** The phone number typed in a form, normalised (spaces, dots and dashes dropped), or undefined. */
  function phoneFrom(req: Request): string | undefined {
    const raw = (req.body as Record<string, unknown>).phoneNumber;
    if (typeof raw !== 'string') return undefined;
    const phone = raw.replace(/[\s().-]/g, '');
    return E164.test(phone) ? phone : undefined;
  }

  app.get('/', (req, res) => {
    // Back from the gateway's device page: note the choice (display only), then drop it from the URL.
    if (typeof req.query.device === 'string') {
      const chosen = simulatedDevices(config).find((d) => d.id === req.query.device);
      if (chosen) setCookie(res, DEVICE_NOTE, chosen.id, { maxAge: 30 * 24 * 3600 });
      return void res.redirect(303, '/');
    }
    const device = deviceOf(req);
    const token = csrf.token(req, res);
    const number = device.subscriber?.phoneNumber ?? defaultNumber;
    page(
      res,
      'Home',
      html`<h1>${appName}</h1>
<p class="lead">A sample application using ${config.operator.name}'s network APIs through express-netauth.</p>
${
  camara
    ? html`<p class="muted">It connects as the CAMARA profile asks: <code>private_key_jwt</code> client authentication and signed requests, with a key pair generated at start (public key: <a href="${APP_JWKS_PATH}">${APP_JWKS_PATH}</a>).</p>
`
    : ''
}<div class="cards">
<section class="card" aria-labelledby="h-verify"><span class="step">Frontend flow</span>
<h2 id="h-verify">Verify my number</h2>
<p>The operator confirms, from this phone's mobile connection, that the number is its own. The first time it asks for consent, confirmed with a code it texts to ${device.subscriber ? html`<a href="${phonePage(device.subscriber.phoneNumber)}">the phone</a>` : 'the phone'}.</p>
<form method="post" action="/verify">
<label for="verify-phone">Your phone number</label>
<input id="verify-phone" name="phoneNumber" type="tel" autocomplete="tel" required value="${number}" aria-describedby="verify-hint">
<p id="verify-hint" class="hint">International format, e.g. ${spacedNumber(defaultNumber)}</p>
<input type="hidden" name="_csrf" value="${token}">
<button type="submit">Verify my number</button>
</form></section>
<section class="card" aria-labelledby="h-swap"><span class="step">Backend flow</span>
<h2 id="h-swap">Check for a SIM swap</h2>
<p>The app asks the operator in the background; the subscriber consents on their phone.</p>
<form method="post" action="/sim-swap">
<label for="swap-phone">Customer's phone number</label>
<input id="swap-phone" name="phoneNumber" type="tel" required value="${defaultNumber}" aria-describedby="swap-hint">
<p id="swap-hint" class="hint">Try ${config.subscribers.map((s, i) => html`${i > 0 ? ', ' : ''}${spacedNumber(s.phoneNumber)}`)}</p>
<input type="hidden" name="_csrf" value="${token}">
<button type="submit">Check for a SIM swap</button>
</form></section>
<section class="card" aria-labelledby="h-device"><span class="step">Simulated network</span>
<h2 id="h-device">This device</h2>
<p><strong>${device.label}</strong></p>
<p>${device.mobile ? html`<span class="badge">On the mobile network</span>` : html`<span class="badge off">Not on the mobile network</span>`} <code>${device.address}</code></p>
<p><a href="${deviceLink()}">Change the simulated device</a></p>
<p class="muted">Subscribers' phones (out-of-band consent): ${config.subscribers.map((s, i) => html`${i > 0 ? ', ' : ''}<a href="${phonePage(s.phoneNumber)}">${s.name ?? spacedNumber(s.phoneNumber)}</a>`)}</p>
</section>
</div>`,
    );
  });

  // ---- Frontend flow ------------------------------------------------------------------------------------
  const start = client.start({
    scope: scopes.numberVerification,
    // In sandbox mode the operator does not look at the network: the typed number names the line.
    login_hint: (req) => (config.sandbox ? `tel:${phoneFrom(req)}` : undefined),
    // Application data, kept in the server-side session and handed back with the token.
    data: (req) => ({ phoneNumber: phoneFrom(req) }),
    returnTo: '/verified',
  });
  app.post(
    '/verify',
    form,
    (req, res, next) => {
      if (!csrf.verify(req))
        return void failurePage(res, 403, { title: 'Form expired', text: 'Reload the home page and try again.' });
      if (!phoneFrom(req))
        return void failurePage(res, 400, {
          title: 'Check the phone number',
          text: 'Enter it in international format: + and the country code, e.g. +34600000001.',
        });
      next();
    },
    start,
  );

  app.get('/callback', client.callback());

  app.get('/verified', async (req, res) => {
    const token = client.token(req);
    if (!token) return void res.redirect(303, '/');
    const phoneNumber = typeof token.data?.phoneNumber === 'string' ? token.data.phoneNumber : '';
    const result = await apiJson(
      await client.fetch(req, `${gatewayUrl}/number-verification/v1/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ phoneNumber }),
      }),
    );
    const verified = result.devicePhoneNumberVerified === true;
    page(
      res,
      verified ? 'Number verified' : 'Number not verified',
      html`<section class="card ${verified ? 'ok' : 'bad'}" aria-labelledby="h-result">
<h1 id="h-result">${verified ? 'Number verified' : 'Number not verified'}</h1>
<p role="status">${verified ? html`<strong>${spacedNumber(phoneNumber)}</strong> is the number of this phone.` : html`This phone's line is not <strong>${spacedNumber(phoneNumber)}</strong>.`}</p>
<dl class="facts"><dt>API</dt><dd><code>POST /number-verification/v1/verify</code> → <code>${JSON.stringify(result)}</code></dd>
<dt>Access token</dt><dd><code>${maskToken(token.access_token)}</code></dd>
<dt>Scope</dt><dd><code>${token.scope ?? ''}</code></dd>
<dt>Expires</dt><dd>${token.expires_at === undefined ? 'not stated by the operator' : `${new Date(token.expires_at).toISOString().replace('T', ' ').slice(0, 19)} UTC`}</dd></dl>
<div class="actions"><a class="button" href="/verified">Call the API again with this token</a><a class="button secondary" href="/">Back to ${appName}</a></div></section>`,
    );
  });

  // ---- Backend flow -------------------------------------------------------------------------------------
  async function run(job: Job): Promise<void> {
    try {
      const token = await client.backchannel({
        login_hint: `tel:${job.phoneNumber}`,
        scope: scopes.simSwap,
        signal: job.abort.signal,
      });
      // The token names the line (CAMARA: no phoneNumber in the body beside a three-legged token).
      const result = await apiJson(
        await client.fetch(token, `${gatewayUrl}/sim-swap/v1/check`, { method: 'POST', signal: job.abort.signal }),
      );
      job.swapped = result.swapped === true;
      job.token = { masked: maskToken(token.access_token), scope: token.scope, expiresAt: token.expires_at };
      job.status = 'done';
    } catch (error) {
      job.failure = failureOf(error);
      job.status = 'failed';
    }
  }

  app.post('/sim-swap', form, (req, res) => {
    if (!csrf.verify(req))
      return void failurePage(res, 403, { title: 'Form expired', text: 'Reload the home page and try again.' });
    const phoneNumber = phoneFrom(req);
    if (!phoneNumber)
      return void failurePage(res, 400, {
        title: 'Check the phone number',
        text: 'Enter it in international format: + and the country code, e.g. +34600000001.',
      });
    // Old jobs go; the map stays small.
    const cutoff = Date.now() - 30 * 60_000;
    for (const [id, old] of jobs) {
      if (old.startedAt >= cutoff && jobs.size <= 500) continue;
      old.abort.abort();
      jobs.delete(id);
    }
    const job: Job = {
      id: randomBytes(16).toString('base64url'),
      phoneNumber,
      startedAt: Date.now(),
      status: 'waiting',
      abort: new AbortController(),
    };
    jobs.set(job.id, job);
    void run(job);
    res.redirect(303, `/sim-swap/${job.id}`);
  });

  app.get('/sim-swap/:id', (req, res) => {
    const job = jobs.get(req.params.id);
    if (!job)
      return void failurePage(res, 404, {
        title: 'No such check',
        text: 'This SIM swap check is unknown or too old. Start a new one.',
      });
    if (job.status === 'failed') return void failurePage(res, 200, job.failure!);
    const number = spacedNumber(job.phoneNumber);
    if (job.status === 'waiting') {
      page(
        res,
        'Waiting for consent',
        html`<section class="card wait" aria-labelledby="h-wait"><h1 id="h-wait">Waiting for the subscriber's consent</h1>
<p role="status">${config.operator.name} is asking the subscriber of <strong>${number}</strong> on their phone. This page updates itself.</p>
<p><a href="${phonePage(job.phoneNumber)}" target="_blank" rel="noopener">Open the subscriber's phone</a> <span class="muted">(the operator's out-of-band channel, simulated)</span></p>
<p class="muted">Started ${Math.round((Date.now() - job.startedAt) / 1000)} s ago.</p></section>`,
        { refresh: 2 },
      );
      return;
    }
    page(
      res,
      'SIM swap result',
      html`<section class="card ${job.swapped ? 'bad' : 'ok'}" aria-labelledby="h-swapped"><h1 id="h-swapped">${job.swapped ? 'The SIM was swapped recently' : 'No recent SIM swap'}</h1>
<p role="status">${job.swapped ? html`The SIM card of <strong>${number}</strong> was changed recently: be careful with this transaction.` : html`The SIM card of <strong>${number}</strong> has not been changed recently.`}</p>
<dl class="facts"><dt>API</dt><dd><code>POST /sim-swap/v1/check</code> → <code>${JSON.stringify({ swapped: job.swapped })}</code></dd>
<dt>Access token</dt><dd><code>${job.token!.masked}</code></dd>
<dt>Scope</dt><dd><code>${job.token!.scope ?? ''}</code></dd></dl>
<div class="actions"><a class="button secondary" href="/">Back to ${appName}</a></div></section>`,
    );
  });

  app.use((_req, res) => failurePage(res, 404, { title: 'Not found', text: 'There is no such page in this app.' }));
  const errors: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    if (res.headersSent) return;
    if (error instanceof NetAuthClientError || error instanceof ApiError)
      return void failurePage(res, error.status, failureOf(error));
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500)
      return void failurePage(res, status, { title: 'Request not understood', text: 'The request could not be read.' });
    console.error('app:', error instanceof Error ? error.message : error);
    failurePage(res, 500, failureOf(error));
  };
  app.use(errors);

  return {
    app,
    close() {
      for (const job of jobs.values()) job.abort.abort();
      jobs.clear();
    },
  };
}
