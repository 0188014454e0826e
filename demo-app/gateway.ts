/**
 * The operator side: express-netauth's router at the issuer path, two sample network APIs guarded by its
 * tokens, the simulated network edge, and the demo's operator pages (device picker, the subscriber's phone).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import express, { type ErrorRequestHandler, type Request, type RequestHandler } from 'express';
import { createNetAuth, type BackchannelRequest, type NetAuth, type Store } from '../lib/index.js';
import { APP_JWKS_PATH, type DemoConfig, type DemoSubscriber } from './config.js';
import { cookies, createCsrf, setCookie } from './csrf.js';
import { DEVICE_COOKIE, findDevice, operatorEdge, simulatedDevices } from './network.js';
import { demoLabels, demoLanguages } from './wording.js';
import { duration, html, logoSvg, purposeWords, sendPage, spacedNumber, type Brand, type Html } from './pages.js';
import { logEvents } from './event-log.js';

export interface GatewayOptions {
  gatewayUrl: string;
  appUrl: string;
  /** Default: the package's MemoryStore. */
  store?: Store;
  /** Receives each gateway event as one readable line (`npm run demo` prints them). */
  log?: (line: string) => void;
}

export interface Gateway {
  app: express.Express;
  netauth: NetAuth;
  issuer: string;
  close(): Promise<void>;
}

interface InboxItem {
  id: string;
  request: BackchannelRequest;
}

/**
 * The subscriber's out-of-band channel: requests from `backchannel.onConsentRequired`, per subscriber, until
 * answered or expired. (A real operator sends an SMS or an app push; one process keeps these in memory.)
 */
class Inbox {
  private readonly items = new Map<string, InboxItem>();

  add(request: BackchannelRequest): void {
    if (this.items.size >= 1000) this.items.delete(this.items.keys().next().value!);
    const id = randomBytes(12).toString('base64url');
    this.items.set(id, { id, request });
  }

  pending(subscriberId: string, now: number): InboxItem[] {
    const out: InboxItem[] = [];
    for (const item of this.items.values()) {
      if (item.request.expiresAt <= now) this.items.delete(item.id);
      else if (item.request.subscriber.id === subscriberId) out.push(item);
    }
    return out;
  }

  get(id: string): InboxItem | undefined {
    return this.items.get(id);
  }

  /** Removes every pending request the answer covers: same client, subscriber and scope. */
  settle(item: InboxItem): void {
    for (const other of this.items.values()) {
      const a = other.request;
      const b = item.request;
      if (a.clientId === b.clientId && a.subscriber.id === b.subscriber.id && a.scope === b.scope)
        this.items.delete(other.id);
    }
  }
}

interface TextMessage {
  subscriberId: string;
  code: string;
  /** The message's words before and after the code, in `language`. */
  before: string;
  after: string;
  language: string;
  expiresAt: number;
}

/**
 * The subscriber's text messages: what `sendConsentConfirmation` sends (the one-time codes of the consent page and
 * of the consents page). A real operator sends an SMS; the handset's apps cannot read it, so only the person
 * holding the phone can confirm.
 */
class TextMessages {
  private readonly messages: TextMessage[] = [];

  add(message: TextMessage): void {
    if (this.messages.length >= 1000) this.messages.shift();
    this.messages.push(message);
  }

  /** The subscriber's messages still good, newest first. */
  of(subscriberId: string, now: number): TextMessage[] {
    return this.messages.filter((m) => m.subscriberId === subscriberId && m.expiresAt > now).reverse();
  }
}

function apiError(status: number, code: string, message: string) {
  return { status, code, message };
}

export function createGateway(config: DemoConfig, options: GatewayOptions): Gateway {
  const { gatewayUrl, appUrl } = options;
  const issuer = `${gatewayUrl}${config.issuerPath}`;
  const inbox = new Inbox();
  const texts = new TextMessages();
  const operator = config.operator;
  const colour = operator.primaryColor ?? '#0b57d0';
  const textColour = operator.primaryTextColor ?? '#ffffff';

  const labels = demoLabels(config);
  const netauth = createNetAuth({
    issuer,
    // By default the CAMARA profile: private_key_jwt clients, ID tokens, CAMARA error bodies at the APIs.
    ...(config.profile === 'camara' ? { profile: 'camara' as const } : {}),
    // The sample app's callback and key URL depend on its port, so they are registered here, not in the config.
    clients: config.clients.map((c) => {
      const isApp = c.clientId === config.app.clientId;
      return {
        ...c,
        redirectUris: [...(c.redirectUris ?? []), ...(isApp ? [`${appUrl}/callback`] : [])],
        // CAMARA profile: the app's public keys, fetched from the app itself, and signed requests only.
        ...(c.tokenEndpointAuthMethod === 'private_key_jwt'
          ? { jwksUri: `${appUrl}${APP_JWKS_PATH}`, requireSignedRequestObject: true }
          : {}),
      };
    }),
    // The sample app serves its keys from this machine: its origin is let through the jwksUri destination policy.
    clientJwks: { internalOrigins: [new URL(appUrl).origin] },
    subscribers: config.subscribers.map((s) => ({
      id: s.id,
      phoneNumber: s.phoneNumber,
      addresses: s.addresses ?? [],
    })),
    consentPolicy: config.consentPolicy,
    ...(options.store ? { store: options.store } : {}),
    lifetimes: config.lifetimes,
    backchannel: { onConsentRequired: (request) => inbox.add(request) },
    // Confirmation through the operator's channel: the code goes to the phone's text messages.
    // The message is the gateway's, in the language the page spoke (consentPage.texts.consentMessage): the code goes
    // where {code} stands.
    sendConsentConfirmation: async (subscriber, code, context) => {
      const at = context.message.indexOf('{code}');
      texts.add({
        subscriberId: subscriber.id,
        code,
        before: at < 0 ? `${context.message} ` : context.message.slice(0, at),
        after: at < 0 ? '' : context.message.slice(at + '{code}'.length),
        language: context.language,
        expiresAt: Date.now() + context.expiresIn * 1000,
      });
    },
    // Sandbox mode identifies by the allow-listed login_hint, never by the network.
    ...(config.sandbox ? { sandbox: config.sandbox } : { network: { mobileRanges: config.network.mobileRanges } }),
    // One gateway process on a laptop: fresh secrets per start are all it needs (production gives every
    // instance the same ones; without them createNetAuth warns at start-up).
    pairwiseSalt: randomBytes(32).toString('base64url'),
    // ID tokens are on by default: an ES256 key per start signs them (without one createNetAuth warns).
    signingKeys: [generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }) as JWK],
    consentPage: {
      cookieSecret: randomBytes(32).toString('base64url'),
      operatorName: operator.name,
      primaryColor: colour,
      primaryTextColor: textColour,
      ...(operator.backgroundColor ? { backgroundColor: operator.backgroundColor } : {}),
      ...(operator.textColor ? { textColor: operator.textColor } : {}),
      ...(operator.logoUrl ? { logoUrl: operator.logoUrl } : {}),
      ...(operator.privacyPolicyUrl ? { privacyPolicyUrl: operator.privacyPolicyUrl } : {}),
      ...(operator.language ? { language: operator.language } : {}),
      // Purposes and scopes in the operator's words, and Spanish for a browser that asks (demo-app/wording.ts).
      ...(labels ? { labels } : {}),
      languages: demoLanguages(config),
    },
  });

  if (options.log) logEvents(netauth.events, options.log);

  const brand: Brand = {
    name: operator.name,
    role: 'Operator · demo',
    color: colour,
    textColor: textColour,
    ...(operator.logoUrl?.startsWith('/') ? { logoUrl: operator.logoUrl } : {}),
  };
  const subscriberById = new Map(config.subscribers.map((s) => [s.id, s]));
  const lineOf = (s: DemoSubscriber) => s.phoneNumber.slice(1);
  const phoneUrl = (s: DemoSubscriber) => `/demo/phone/${lineOf(s)}`;
  const csrf = createCsrf('demo_gw_csrf', '/demo');
  const form = express.urlencoded({ extended: false, limit: '4kb' });

  const app = express();
  app.disable('x-powered-by');
  // The edge (below) is the only proxy: X-Forwarded-For is believed from loopback, and the edge overwrites it.
  app.set('trust proxy', 'loopback');
  app.use(operatorEdge(config));
  app.use(config.issuerPath, netauth.router);

  // ---- Sample network APIs, guarded by the gateway's access tokens -------------------------------------
  // The guard applies the CAMARA conventions: Commonalities error bodies, the x-correlator echo, and which
  // device a call is about (the three-legged token's; an identifier in the body beside it is refused).
  const json: RequestHandler = express.json({ limit: '4kb' });
  const E164 = /^\+[1-9][0-9]{4,14}$/;

  app.post(
    '/sim-swap/v1/check',
    netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: { identifier: 'phoneNumber' } }),
    (req, res) => {
      res.json({ swapped: subscriberById.get(req.netauth!.device!.subscriber.id)?.simSwapped ?? false });
    },
  );

  // Number Verification's body holds the number to check, not an identifier: only the token names the device.
  app.post(
    '/number-verification/v1/verify',
    netauth.guard({ scope: 'number-verification', errorFormat: 'camara', device: { identifier: 'none' } }),
    json,
    (req, res) => {
      const body = (req.body ?? {}) as { phoneNumber?: unknown };
      if (typeof body.phoneNumber !== 'string' || !E164.test(body.phoneNumber)) {
        res.status(400).json(apiError(400, 'INVALID_ARGUMENT', 'phoneNumber must be +<E.164>'));
        return;
      }
      res.json({ devicePhoneNumberVerified: body.phoneNumber === req.netauth!.device!.subscriber.phoneNumber });
    },
  );

  // ---- Demo pages ---------------------------------------------------------------------------------------
  // The logo is also the favicon (browsers ask every origin for /favicon.ico, the consent page included).
  for (const path of ['/demo/logo.svg', '/favicon.ico']) {
    app.get(path, (_req, res) => {
      res.type('image/svg+xml').set('Cache-Control', 'public, max-age=3600').send(logoSvg(colour, textColour));
    });
  }

  app.get('/', (req, res) => {
    const device = findDevice(config, cookies(req)[DEVICE_COOKIE]);
    sendPage(res, {
      title: 'Operator gateway',
      brand: { ...brand, role: 'Operator gateway · demo' },
      body: html`<h1>${operator.name}: network API gateway</h1>
<p class="lead">The operator side of the demo. The sample application is at <a href="${appUrl}/">${appUrl}</a>.</p>
<div class="cards">
<section class="card" aria-labelledby="h-auth"><h2 id="h-auth">Authorization service</h2>
<p>Issuer <code>${issuer}</code></p>
<p><a href="${config.issuerPath}/.well-known/openid-configuration">Discovery metadata</a></p>
<p>Network APIs, guarded by its access tokens:</p>
<ul class="plain"><li><code>POST /sim-swap/v1/check</code></li><li><code>POST /number-verification/v1/verify</code></li></ul></section>
<section class="card" aria-labelledby="h-dev"><h2 id="h-dev">Simulated device</h2>
<p>This browser is: <strong>${device.label}</strong> (<code>${device.address}</code>).</p>
<p><a href="/demo/device">Change the simulated device</a></p>
<p><a href="${config.issuerPath}/consents">Consents of this device's line</a> (the subscriber's page, withdraw there)</p></section>
<section class="card" aria-labelledby="h-phones"><h2 id="h-phones">Subscribers' phones</h2>
<p class="muted">Where the operator asks for consent out-of-band (backend flow).</p>
<ul class="plain">${config.subscribers.map((s) => html`<li><a href="${phoneUrl(s)}">${s.name ?? s.id}: ${spacedNumber(s.phoneNumber)}</a></li>`)}</ul></section>
</div>`,
    });
  });

  /** Where the device page may send the browser back to: the app or this gateway, nowhere else. */
  const safeReturn = (value: unknown): URL | undefined => {
    if (typeof value !== 'string' || value.length > 2000) return undefined;
    try {
      const url = new URL(value);
      return url.origin === new URL(appUrl).origin || url.origin === new URL(gatewayUrl).origin ? url : undefined;
    } catch {
      return undefined;
    }
  };

  app.get('/demo/device', (req, res) => {
    const current = findDevice(config, cookies(req)[DEVICE_COOKIE]);
    const back = safeReturn(req.query.return);
    sendPage(res, {
      title: 'Simulated device',
      brand,
      narrow: true,
      formTargets: [new URL(appUrl).origin],
      body: html`<h1>Which device is this browser?</h1>
<p class="lead">The demo plays the mobile network on loopback. Pick a subscriber's line to be recognised by the network, or WiFi to see the failure path.</p>
<form method="post" action="/demo/device" class="card">
<fieldset><legend>Simulated device</legend>
${simulatedDevices(config).map(
  (d) =>
    html`<label class="choice"><input type="radio" name="device" value="${d.id}"${d.id === current.id ? html` checked` : ''}><span>${d.label}<br><span class="muted">${d.mobile ? 'Mobile network' : 'Outside the mobile network'}, address <code>${d.address}</code></span></span></label>`,
)}
</fieldset>
<input type="hidden" name="return" value="${back?.href ?? ''}">
<input type="hidden" name="_csrf" value="${csrf.token(req, res)}">
<div class="actions"><button type="submit">Use this device</button></div>
</form>
${back ? html`<p><a href="${back.href}">Back without changing</a></p>` : ''}`,
    });
  });

  app.post('/demo/device', form, (req, res) => {
    const body = req.body as Record<string, unknown>;
    if (!csrf.verify(req)) return void forbidden(res);
    const device = simulatedDevices(config).find((d) => d.id === body.device);
    if (!device) return void badRequest(res, 'Choose one of the devices.');
    setCookie(res, DEVICE_COOKIE, device.id, { maxAge: 30 * 24 * 3600 });
    const back = safeReturn(body.return);
    if (back && back.origin === new URL(appUrl).origin) back.searchParams.set('device', device.id);
    res.redirect(303, back?.href ?? '/demo/device');
  });

  // The subscriber's phone: the out-of-band consent channel of the backend flow.
  const phoneOf = (req: Request): DemoSubscriber | undefined => {
    const line = req.params.line;
    return typeof line === 'string' ? config.subscribers.find((s) => lineOf(s) === line) : undefined;
  };
  const rulesFor = (clientId: string) => {
    const client = config.clients.find((c) => c.clientId === clientId);
    return config.consentPolicy.filter(
      (r) => r.basis === 'consent' && client?.scopes.includes(`dpv:${r.purpose}#${r.scope}`),
    );
  };

  app.get('/demo/phone/:line', async (req, res) => {
    const subscriber = phoneOf(req);
    if (!subscriber) return void notFound(res);
    const now = Date.now();
    const pending = inbox.pending(subscriber.id, now);
    const messages = texts.of(subscriber.id, now);
    const token = csrf.token(req, res);
    const clientName = (clientId: string) => config.clients.find((c) => c.clientId === clientId)?.name ?? clientId;
    const consents = (await netauth.consent.list({ subscriberId: subscriber.id })).map((r) => ({
      clientId: r.clientId,
      clientName: clientName(r.clientId),
      scope: `dpv:${r.purpose}#${r.scope}`,
      purpose: r.purpose,
      what: config.consentPolicy.find((p) => p.purpose === r.purpose && p.scope === r.scope)?.description ?? r.scope,
      status: r.status,
    }));
    const line = simulatedDevices(config).find((d) => d.subscriber?.id === subscriber.id);
    const notice = typeof req.query.answered === 'string' ? req.query.answered : undefined;
    const describe = (request: BackchannelRequest): Html[] =>
      request.scopes.map((s) => {
        const rule = config.consentPolicy.find((r) => r.purpose === request.purpose && r.scope === s);
        return html`<li>${rule?.description ?? s} <code>${s}</code></li>`;
      });
    sendPage(res, {
      title: `Phone ${spacedNumber(subscriber.phoneNumber)}`,
      brand: {
        ...brand,
        role: `${subscriber.name ? `${subscriber.name}'s phone` : 'Phone'} · ${spacedNumber(subscriber.phoneNumber)}`,
      },
      narrow: true,
      // With nothing to answer, the inbox looks for new requests every few seconds (no JavaScript).
      ...(pending.length === 0 ? { refresh: 3 } : {}),
      body: html`<h1>Messages from ${operator.name}</h1>
<p class="lead">The subscriber's out-of-band channel (in real life an SMS or the operator's app).</p>
${notice === 'allow' ? html`<p class="card ok" role="status">Thank you: your consent is recorded.</p>` : ''}
${notice === 'deny' ? html`<p class="card bad" role="status">Done: the request was refused and nothing is shared.</p>` : ''}
${notice === 'withdrawn' ? html`<p class="card ok" role="status">Your consent was withdrawn; the application will be asked again next time.</p>` : ''}
${pending.length === 0 ? html`<p class="card" role="status">No requests waiting for your answer. This page checks again every few seconds.</p>` : ''}
${
  messages.length === 0
    ? ''
    : html`<section class="card" aria-labelledby="h-texts"><h2 id="h-texts">Text messages</h2>
<ul class="plain">${messages.map((m) => html`<li lang="${m.language}">${m.before}<strong class="sms-code">${m.code}</strong>${m.after}</li>`)}</ul></section>`
}
${pending.map(
  (item) => html`<section class="card wait" aria-labelledby="req-${item.id}">
<h2 id="req-${item.id}">${item.request.clientName ?? item.request.clientId} asks for your consent</h2>
<p>Purpose: <strong>${purposeWords(item.request.purpose)}</strong></p>
<p>It would be able to:</p><ul>${describe(item.request)}</ul>
<p class="muted">Expires in ${duration(item.request.expiresAt - now)}.</p>
<form method="post" action="${phoneUrl(subscriber)}/answer">
<input type="hidden" name="id" value="${item.id}"><input type="hidden" name="_csrf" value="${token}">
<div class="actions"><button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny" class="secondary">Deny</button></div>
</form></section>`,
)}
<section class="card" aria-labelledby="h-consents"><h2 id="h-consents">Your consents</h2>
${consents.length === 0 ? html`<p class="muted">None on record.</p>` : ''}
${consents.map(
  (c) => html`<form method="post" action="${phoneUrl(subscriber)}/withdraw" class="choice">
<span>${c.clientName}: ${c.what} <span class="badge${c.status === 'granted' ? '' : ' off'}">${c.status}</span></span>
<input type="hidden" name="clientId" value="${c.clientId}"><input type="hidden" name="scope" value="${c.scope}"><input type="hidden" name="_csrf" value="${token}">
<button type="submit" class="secondary">${c.status === 'granted' ? 'Withdraw' : 'Forget'}</button></form>`,
)}
${
  line
    ? html`<form method="post" action="${phoneUrl(subscriber)}/consents">
<p class="muted">The operator's own page, where the network recognises this phone's line:</p>
<input type="hidden" name="_csrf" value="${token}">
<div class="actions"><button type="submit" class="secondary">Open my consents page</button></div></form>`
    : ''
}
</section>`,
    });
  });

  app.post('/demo/phone/:line/answer', form, async (req, res) => {
    const subscriber = phoneOf(req);
    if (!subscriber) return void notFound(res);
    if (!csrf.verify(req)) return void forbidden(res);
    const body = req.body as Record<string, unknown>;
    const item = typeof body.id === 'string' ? inbox.get(body.id) : undefined;
    if (!item || item.request.subscriber.id !== subscriber.id)
      return void badRequest(res, 'This request is no longer waiting for an answer.');
    if (body.decision !== 'allow' && body.decision !== 'deny') return void badRequest(res, 'Choose Allow or Deny.');
    const input = { clientId: item.request.clientId, subscriberId: subscriber.id, scope: item.request.scope };
    if (body.decision === 'allow') await netauth.consent.grant(input);
    else await netauth.consent.deny(input);
    inbox.settle(item);
    res.redirect(303, `${phoneUrl(subscriber)}?answered=${body.decision}`);
  });

  app.post('/demo/phone/:line/withdraw', form, async (req, res) => {
    const subscriber = phoneOf(req);
    if (!subscriber) return void notFound(res);
    if (!csrf.verify(req)) return void forbidden(res);
    const body = req.body as Record<string, unknown>;
    const clientId = typeof body.clientId === 'string' ? body.clientId : '';
    const scope = typeof body.scope === 'string' ? body.scope : '';
    if (!rulesFor(clientId).some((r) => `dpv:${r.purpose}#${r.scope}` === scope))
      return void badRequest(res, 'Unknown consent.');
    await netauth.consent.revoke({ clientId, subscriberId: subscriber.id, scope });
    res.redirect(303, `${phoneUrl(subscriber)}?answered=withdrawn`);
  });

  // The subscriber opens the operator's consents page from the phone: this browser becomes that phone's line on
  // the simulated network, and the gateway identifies it by its address, as it would on the mobile network.
  app.post('/demo/phone/:line/consents', form, (req, res) => {
    const subscriber = phoneOf(req);
    if (!subscriber) return void notFound(res);
    if (!csrf.verify(req)) return void forbidden(res);
    const device = simulatedDevices(config).find((d) => d.subscriber?.id === subscriber.id);
    if (!device) return void badRequest(res, 'This line has no address on the simulated network.');
    setCookie(res, DEVICE_COOKIE, device.id, { maxAge: 30 * 24 * 3600 });
    res.redirect(303, `${config.issuerPath}/consents`);
  });

  function problem(res: express.Response, status: number, title: string, text: string): void {
    sendPage(res, {
      status,
      title,
      brand,
      narrow: true,
      body: html`<h1>${title}</h1><p>${text}</p><p><a href="/">Operator gateway home</a></p>`,
    });
  }
  const notFound = (res: express.Response) =>
    problem(res, 404, 'Not found', 'There is no such page or phone line on this gateway.');
  const forbidden = (res: express.Response) =>
    problem(
      res,
      403,
      'Form expired',
      'This form could not be verified (it is stale or came from another site). Go back, reload the page and try again.',
    );
  const badRequest = (res: express.Response, text: string) => problem(res, 400, 'Request not understood', text);

  app.use((_req, res) => notFound(res));
  const errors: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      if (req.path.startsWith('/demo/') || req.path === '/')
        return void problem(res, status, 'Request not understood', 'The request could not be read.');
      return void res.status(status).json(apiError(status, 'INVALID_ARGUMENT', 'the request body could not be read'));
    }
    console.error('gateway:', error instanceof Error ? error.message : error);
    if (res.headersSent) return;
    problem(res, 500, 'Something went wrong', 'The operator gateway could not complete this request.');
  };
  app.use(errors);

  return { app, netauth, issuer, close: () => netauth.close() };
}
