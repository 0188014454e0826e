/**
 * The demo's operator-side rules over plain HTTP (no browser): the simulated edge decides the device address
 * whatever the client sends, the device page returns only to the demo's own sites, the demo's forms need
 * their CSRF token, and the sample APIs need the gateway's tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { DEFAULT_CONFIG, resolveConfig } from '../../demo-app/config.js';
import { startDemo, type RunningDemo } from '../../demo-app/start.js';
import { Browser } from '../helpers/browser.js';
import { appAuthorizeUrl, hidden, verifyNumber } from '../helpers/demo.js';

/** Starts a SIM swap check in the app and follows its status page until it is no longer waiting. */
async function waitForCheck(demo: RunningDemo, browser: Browser, phoneNumber: string): Promise<string> {
  const home = await (await browser.request(`${demo.appUrl}/`)).text();
  const started = await browser.request(`${demo.appUrl}/sim-swap`, {
    form: { phoneNumber, _csrf: hidden(home, '_csrf') },
  });
  expect(started.status).toBe(303);
  const status = new URL(started.headers.get('location')!, demo.appUrl);
  for (let i = 0; i < 100; i++) {
    const page = await (await browser.request(status)).text();
    if (!page.includes('Waiting for the subscriber')) return page;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the check is still waiting');
}

describe('demo gateway over HTTP', () => {
  let demo: RunningDemo;

  beforeAll(async () => {
    demo = await startDemo(resolveConfig({ host: '127.0.0.1', ports: { gateway: 0, app: 0 } }, 'test'));
  });
  afterAll(() => demo?.close());

  /** An authorization request built by hand: unsigned. */
  function unsignedAuthorize(): string {
    const url = new URL(`${demo.issuer}/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: 'demo-app',
      redirect_uri: `${demo.appUrl}/callback`,
      scope: 'dpv:RequestedServiceProvision#number-verification',
      state: 'xyz',
    }).toString();
    return url.href;
  }

  it('both sites answer /favicon.ico (browsers ask every origin, the consent page included): no 404', async () => {
    for (const origin of [demo.gatewayUrl, demo.appUrl]) {
      const icon = await fetch(`${origin}/favicon.ico`);
      expect(icon.status).toBe(200);
      expect(icon.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
      expect(await icon.text()).toMatch(/^<svg /);
    }
  });

  it('the sample app is a CAMARA-profile client: its requests are signed by its key, an unsigned one is refused', async () => {
    const signed = await appAuthorizeUrl(demo);
    const request = signed.searchParams.get('request')!;
    const jwks = (await (await fetch(`${demo.appUrl}/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
    expect(decodeProtectedHeader(request)).toMatchObject({ alg: 'ES256', kid: jwks.keys[0]!.kid });
    expect(decodeJwt(request)).toMatchObject({
      iss: 'demo-app',
      aud: demo.issuer,
      client_id: 'demo-app',
      redirect_uri: `${demo.appUrl}/callback`,
    });
    const unsigned = await fetch(unsignedAuthorize(), { redirect: 'manual' });
    const back = new URL(unsigned.headers.get('location')!);
    expect(back.origin + back.pathname).toBe(`${demo.appUrl}/callback`);
    expect(back.searchParams.get('error')).toBe('invalid_request');
  });

  it('the edge overwrites X-Forwarded-For: a client cannot claim a line, nor hide its simulated WiFi', async () => {
    // No device cookie: the first line. A forged WiFi address in the header changes nothing.
    const asLine = await fetch(await appAuthorizeUrl(demo), {
      redirect: 'manual',
      headers: { 'X-Forwarded-For': '192.0.2.99' },
    });
    expect(asLine.status).toBe(302);
    expect(new URL(asLine.headers.get('location')!).pathname).toBe('/apigateway/consent');
    // WiFi chosen: claiming the first line's address in the header changes nothing either.
    const onWifi = await fetch(await appAuthorizeUrl(demo), {
      redirect: 'manual',
      headers: { Cookie: 'demo_device=wifi', 'X-Forwarded-For': '127.0.0.1' },
    });
    const back = new URL(onWifi.headers.get('location')!);
    expect(back.origin + back.pathname).toBe(`${demo.appUrl}/callback`);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('error_description')).toMatch(/not identified by the mobile network/);
  });

  it('the device page needs its CSRF token and returns only to the demo sites', async () => {
    const browser = new Browser();
    const page = await (
      await browser.request(`${demo.gatewayUrl}/demo/device?return=${encodeURIComponent('https://evil.example/')}`)
    ).text();
    expect(hidden(page, 'return')).toBe('');
    const csrf = hidden(page, '_csrf');

    const forged = await browser.request(`${demo.gatewayUrl}/demo/device`, {
      form: { device: 'wifi', return: `${demo.appUrl}/` },
    });
    expect(forged.status).toBe(403);
    expect(forged.headers.getSetCookie().join()).not.toContain('demo_device');

    const elsewhere = await browser.request(`${demo.gatewayUrl}/demo/device`, {
      form: { device: 'wifi', return: 'https://evil.example/', _csrf: csrf },
    });
    expect(elsewhere.status).toBe(303);
    expect(elsewhere.headers.get('location')).toBe('/demo/device');

    const toApp = await browser.request(`${demo.gatewayUrl}/demo/device`, {
      form: { device: 'line:sub-0002', return: `${demo.appUrl}/`, _csrf: csrf },
    });
    expect(toApp.headers.get('location')).toBe(`${demo.appUrl}/?device=line%3Asub-0002`);
    expect(toApp.headers.getSetCookie().join()).toMatch(/demo_device=line%3Asub-0002; Path=\/; HttpOnly; SameSite=Lax/);

    const unknown = await browser.request(`${demo.gatewayUrl}/demo/device`, {
      form: { device: 'line:nobody', _csrf: csrf },
    });
    expect(unknown.status).toBe(400);
  });

  it("the phone inbox: unknown lines are 404, answers need the page's CSRF token", async () => {
    expect((await fetch(`${demo.gatewayUrl}/demo/phone/34999999999`)).status).toBe(404);
    const browser = new Browser();
    const inbox = await browser.request(`${demo.gatewayUrl}/demo/phone/34600000001`);
    expect(inbox.status).toBe(200);
    expect(inbox.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await inbox.text();
    expect(page).toContain('No requests waiting');
    expect(page).toContain('<meta http-equiv="refresh" content="3">');
    const forged = await browser.request(`${demo.gatewayUrl}/demo/phone/34600000001/answer`, {
      form: { id: 'x', decision: 'allow' },
    });
    expect(forged.status).toBe(403);
    // The demo's forms share one token per browser (the device page has a form even when the inbox is empty).
    const csrf = hidden(await (await browser.request(`${demo.gatewayUrl}/demo/device`)).text(), '_csrf');
    const stale = await browser.request(`${demo.gatewayUrl}/demo/phone/34600000001/answer`, {
      form: { id: 'x', decision: 'allow', _csrf: csrf },
    });
    expect(stale.status).toBe(400);
  });

  it('the sample APIs need a token of the right scope, and answer as CAMARA APIs (Commonalities body, x-correlator)', async () => {
    for (const path of ['/sim-swap/v1/check', '/number-verification/v1/verify']) {
      const res = await fetch(`${demo.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-correlator': 'demo-1' },
        body: '{}',
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm=.*, DPoP realm=/);
      expect(res.headers.get('x-correlator')).toBe('demo-1');
      expect(await res.json()).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    }
  });

  it('a callback this browser did not start is a friendly state-mismatch page', async () => {
    const res = await fetch(`${demo.appUrl}/callback?code=abc&state=forged`);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('This answer does not belong to this browser session');
  });

  it('the backend flow for a number the operator does not know ends on a friendly page', async () => {
    const page = await waitForCheck(demo, new Browser(), '+34699999999');
    expect(page).toContain('The operator does not know this number');
    expect(page).toContain('unknown_user_id');
  });

  it('escapes what it echoes and answers unknown pages with 404', async () => {
    const res = await fetch(`${demo.appUrl}/sim-swap/%3Cscript%3E`);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('<script>');
    expect((await fetch(`${demo.gatewayUrl}/nothing-here`)).status).toBe(404);
  });
});

describe('demo in sandbox mode, with short lifetimes', () => {
  let demo: RunningDemo;

  beforeAll(async () => {
    demo = await startDemo(
      resolveConfig(
        {
          host: '127.0.0.1',
          ports: { gateway: 0, app: 0 },
          sandbox: { allowList: ['+34600000001', '+34600000002'] },
          lifetimes: { authReqId: 2, pollInterval: 1 },
        },
        'test',
      ),
    );
  });
  afterAll(() => demo?.close());

  it('the typed number names the line (login_hint), whatever the simulated network', async () => {
    const browser = new Browser();
    const home = await (await browser.request(`${demo.appUrl}/`, { headers: { Cookie: 'demo_device=wifi' } })).text();
    const start = await browser.request(`${demo.appUrl}/verify`, {
      form: { phoneNumber: '+34 600 000 002', _csrf: hidden(home, '_csrf') },
    });
    const authorize = new URL(start.headers.get('location')!);
    // Inside the signed request (the CAMARA profile: only signed parameters count).
    expect(decodeJwt(authorize.searchParams.get('request')!).login_hint).toBe('tel:+34600000002');
    const consent = await fetch(authorize, { redirect: 'manual', headers: { Cookie: 'demo_device=wifi' } });
    expect(new URL(consent.headers.get('location')!).pathname).toBe('/apigateway/consent');
  });

  it('a backend request nobody answers expires: "the request expired"', async () => {
    const page = await waitForCheck(demo, new Browser(), '+34600000001');
    expect(page).toContain('The request expired');
  });

  it('a line off the sandbox allow-list is refused', async () => {
    const page = await waitForCheck(demo, new Browser(), '+34600000003');
    expect(page).toContain('Consent was not given');
    expect(page).toContain('access_denied');
  });
});

describe('demo with the app registered with a client secret', () => {
  let demo: RunningDemo;

  beforeAll(async () => {
    const { tokenEndpointAuthMethod: _camara, ...app } = DEFAULT_CONFIG.clients[0]!;
    demo = await startDemo(
      resolveConfig(
        {
          host: '127.0.0.1',
          ports: { gateway: 0, app: 0 },
          profile: 'none',
          clients: [{ ...app, clientSecret: 'demo-app-secret' }],
        },
        'test',
      ),
    );
  });
  afterAll(() => demo?.close());

  it('runs the frontend flow with client_secret_basic and plain requests, and publishes no keys', async () => {
    const done = await verifyNumber(demo);
    expect(done.authorizeUrl.searchParams.has('request')).toBe(false);
    expect(done.authorizeUrl.searchParams.get('scope')).toBe('dpv:RequestedServiceProvision#number-verification');
    expect(done.finalUrl.pathname).toBe('/verified');
    expect(done.page).toContain('Number verified');
    expect((await fetch(`${demo.appUrl}/jwks.json`)).status).toBe(404);
  });
});
