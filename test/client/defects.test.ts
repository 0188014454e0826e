/**
 * Issue 19's four defects, each against this package's gateway and against node-oidc-provider, over real
 * HTTP: a test browser, the application (express-session + express-netauth/client) and the gateway on
 * loopback ports.
 */
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAYS, type GatewayUnderTest } from '../helpers/client-gateways.js';
import { json, rejection, startClientFixture, type ClientApp } from '../helpers/client-app.js';
import { describeNoSecretsInErrors, recordedErrors, secretsInErrors, watchSecrets } from '../helpers/client-secrets.js';
import { Browser } from '../helpers/browser.js';

watchSecrets();

describe.each(GATEWAYS)('issue 19 defects, against $name', ({ start }) => {
  let gw: GatewayUnderTest;
  let app: ClientApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ gw, app, close } = await startClientFixture(start));
  });
  afterEach(() => gw.tamperToken(undefined));
  afterAll(() => close());

  /** Runs the frontend flow up to the callback, which is returned unvisited. */
  async function callbackUrl(browser: Browser, hint?: string): Promise<URL> {
    const { res, url } = await browser.navigate(
      `${app.url}/start${hint ? `?hint=${encodeURIComponent(hint)}` : ''}`,
      (next) => next.pathname === '/app/callback',
    );
    await res.body?.cancel();
    expect(url.pathname).toBe('/app/callback');
    return url;
  }

  describe('1. a token response without expires_in (RFC 6749 §5.1: RECOMMENDED, not required)', () => {
    it('frontend flow: the token is live (no expiry known), and the service API call is made', async () => {
      gw.tamperToken((body) => void delete body.expires_in);
      const browser = new Browser();
      const { res } = await browser.navigate(`${app.url}/start`);
      const token = (await json(res)).token as Record<string, unknown>;
      expect(token).toMatchObject({ expired: false, scope: gw.scope });
      expect(token.expires_at).toBeUndefined();
      const api = await browser.request(`${app.url}/api`);
      expect(api.status).toBe(200);
    });

    it('backend flow: expires_at is undefined, not now', async () => {
      gw.tamperToken((body) => void delete body.expires_in);
      const token = await app.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
      expect(token.expires_in).toBeUndefined();
      expect(token.expires_at).toBeUndefined();
    });

    it('with expires_in, expires_at counts from now (the control)', async () => {
      const before = Date.now();
      const token = await app.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
      expect(token.expires_at).toBeGreaterThanOrEqual(before + 3_600_000);
    });
  });

  describe('2. callbacks an attacker or a stale tab can send are 4xx, not 502, and store nothing', () => {
    it('an unknown code: 400 invalid_callback (the gateway said invalid_grant)', async () => {
      const browser = new Browser();
      const url = await callbackUrl(browser);
      url.searchParams.set('code', 'an-unknown-code-0123456789');
      const res = await browser.request(url);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ kind: 'invalid_callback', error: null, token: null });
    });

    it("an injected code (another flow's genuine code, with the victim's state): 400 invalid_callback (PKCE)", async () => {
      const attacker = new Browser();
      const attackerCode = (await callbackUrl(attacker)).searchParams.get('code')!;
      const victim = new Browser();
      const url = await callbackUrl(victim);
      url.searchParams.set('code', attackerCode);
      const res = await victim.request(url);
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ kind: 'invalid_callback', token: null });
    });

    it('another issuer in iss, or none where the gateway promises it (RFC 9207): 400 invalid_callback, no exchange', async () => {
      for (const iss of ['https://evil.example', undefined]) {
        const browser = new Browser();
        const url = await callbackUrl(browser);
        expect(url.searchParams.get('iss')).toBe(gw.issuer);
        if (iss === undefined) url.searchParams.delete('iss');
        else url.searchParams.set('iss', iss);
        const res = await browser.request(url);
        expect(res.status).toBe(400);
        expect(await json(res)).toEqual({ kind: 'invalid_callback', error: null, token: null });
        expect((await json(await browser.request(`${app.url}/me`))).token).toBeNull();
      }
    });
  });

  describe('3. a token response that fails validation reaches no log with its token', () => {
    it('frontend flow: scope sent as an array is 502 token_error, and the error carries no token', async () => {
      gw.tamperToken((body) => {
        body.scope = [body.scope];
      });
      const res = (await new Browser().navigate(`${app.url}/start`)).res;
      expect(res.status).toBe(502);
      expect(await json(res)).toMatchObject({ kind: 'token_error', token: null });
      const error = recordedErrors().at(-1);
      expect(inspect(error, { depth: null })).not.toMatch(/access_token/);
      expect(secretsInErrors('defect-3').found).toEqual([]);
    });

    it('backend flow: the same, from backchannel()', async () => {
      gw.tamperToken((body) => {
        body.scope = [body.scope];
      });
      const error = await rejection(app.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope }));
      expect(error).toMatchObject({ kind: 'token_error', status: 502 });
      expect(inspect(error, { depth: null })).not.toMatch(/access_token/);
      expect(secretsInErrors('defect-3').found).toEqual([]);
    });
  });

  describe("4. an error response is believed only from this gateway's iss (RFC 9207 §2.4)", () => {
    it('access_denied with a foreign iss: 400 invalid_callback, not "denied"', async () => {
      const browser = new Browser();
      const genuine = await callbackUrl(browser);
      const forged = new URL(genuine.origin + genuine.pathname);
      forged.search = new URLSearchParams({
        error: 'access_denied',
        state: genuine.searchParams.get('state')!,
        iss: 'https://evil.example',
      }).toString();
      const res = await browser.request(forged);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ kind: 'invalid_callback', error: null, token: null });
    });

    it("access_denied with the gateway's own iss is still 'denied' (the control)", async () => {
      const { res } = await new Browser().navigate(`${app.url}/start?hint=${encodeURIComponent(gw.hints.denied)}`);
      expect(res.status).toBe(403);
      expect(await json(res)).toMatchObject({ kind: 'denied', error: 'access_denied', token: null });
    });
  });
});

describeNoSecretsInErrors('defects', { errors: 14, secrets: 20 });
