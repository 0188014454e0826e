/**
 * Refresh tokens on the app side (issue 19: "used transparently before expiry, with rotation"), against this
 * package's gateway and node-oidc-provider (rotating refresh tokens) over real HTTP: requireToken() and fetch()
 * refresh an expiring session token and store the rotated refresh token, one refresh at a time per token within
 * a process; a refused refresh ends the token as an expiry does; client.refresh(token) for the backend flow.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type express from 'express';
import * as oidc from 'openid-client';
import { createNetAuthClient, NetAuthClientError, type NetAuthClient } from '../../lib/client/index.js';
import { GATEWAYS, type GatewayUnderTest } from '../helpers/client-gateways.js';
import {
  clientOptions,
  json,
  mountClientApp,
  rejection,
  startClientFixture,
  type ClientApp,
} from '../helpers/client-app.js';
import { describeNoSecretsInErrors, rememberSecrets, watchSecrets } from '../helpers/client-secrets.js';
import { Browser } from '../helpers/browser.js';
import { SECRET } from '../helpers/gateway.js';

watchSecrets();
rememberSecrets(SECRET);

/** Whether the gateway holds this token as active (RFC 7662). */
async function active(client: NetAuthClient, token: string, hint?: 'refresh_token'): Promise<boolean> {
  return (
    await oidc.tokenIntrospection(await client.configuration(), token, hint ? { token_type_hint: hint } : undefined)
  ).active;
}

describe.each(GATEWAYS)('refresh tokens on the app side, against $name', ({ start }) => {
  let gw: GatewayUnderTest;
  let app: ClientApp;
  let close: () => Promise<void>;
  /** The session's refresh token, as the test host reads it (the application never sees it). */
  let sessionRefreshToken: (browser: Browser) => Promise<string | undefined>;
  /** Token responses carrying a refresh token, as the gateway sent them: the code exchange and every refresh. */
  let issued = 0;

  beforeAll(async () => {
    let host: express.Express;
    let base: string;
    ({ host, base, gw, close } = await startClientFixture(start, ['/offline']));
    // node-oidc-provider grants offline_access at /authorize only with prompt=consent (OIDC Core §11).
    app = mountClientApp(
      host,
      base,
      '/offline',
      gw,
      'secret',
      {},
      { scope: `${gw.scope} offline_access`, ...(gw.name === 'node-oidc-provider' ? { prompt: 'consent' } : {}) },
    );
    host.get(
      '/offline/session',
      (req, res) => void res.json({ refresh_token: req.session?.netauth?.refresh_token ?? null }),
    );
    sessionRefreshToken = async (browser) =>
      ((await json(await browser.request(`${app.url}/session`))).refresh_token as string | null) ?? undefined;
    gw.tamperToken((body) => void (body.refresh_token === undefined || issued++));
  });
  afterEach(() => {
    app.clock.offset = 0;
  });
  afterAll(() => close());

  async function signIn(): Promise<{
    browser: Browser;
    token: { access_token: string; scope: string };
    refreshToken: string;
  }> {
    const browser = new Browser();
    const signedIn = await json((await browser.navigate(`${app.url}/start`)).res);
    const refreshToken = await sessionRefreshToken(browser);
    if (refreshToken === undefined) throw new Error('the gateway issued no refresh token');
    return { browser, token: signedIn.token as { access_token: string; scope: string }, refreshToken };
  }

  /** The session's token is within the refresh margin (30 s) of its expiry, on the app's clock. */
  const expiring = () => {
    app.clock.offset = 3600_000 - 10_000;
  };

  it('fetch() refreshes an expiring token first, and stores the rotated refresh token', async () => {
    const { browser, token, refreshToken } = await signIn();
    // Not due yet: nothing is refreshed.
    const before = issued;
    expect((await browser.request(`${app.url}/api`)).status).toBe(200);
    expect(issued).toBe(before);

    expiring();
    const api = await browser.request(`${app.url}/api`);
    expect(api.status).toBe(200);
    expect(issued).toBe(before + 1);
    const now = (await json(await browser.request(`${app.url}/me`))).token as {
      access_token: string;
      scope: string;
      expired: boolean;
    };
    expect(now.access_token).not.toBe(token.access_token);
    expect(now.expired).toBe(false);
    const rotated = await sessionRefreshToken(browser);
    expect(rotated).toBeDefined();
    expect(rotated).not.toBe(refreshToken);
    expect(await active(app.client, rotated!, 'refresh_token')).toBe(true);
    expect(await active(app.client, refreshToken, 'refresh_token')).toBe(false);
  });

  it('requireToken() refreshes instead of starting a new flow', async () => {
    const { browser, token } = await signIn();
    expiring();
    const res = await browser.request(`${app.url}/protected`);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect((body.token as { access_token: string }).access_token).not.toBe(token.access_token);
    // And a token that already expired is refreshed the same way.
    app.clock.offset = 2 * 3600_000 + 3600_000;
    expect((await browser.request(`${app.url}/protected`)).status).toBe(200);
  });

  it('10 parallel requests of one session with an expiring token: one refresh at the gateway, every request served, the grant alive', async () => {
    const { browser, refreshToken } = await signIn();
    expiring();
    const before = issued;
    const answers = await Promise.all(Array.from({ length: 10 }, () => browser.request(`${app.url}/api`)));
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(issued).toBe(before + 1);
    // No request presented the rotated-out token (a reuse would have revoked the grant): the new one works.
    const rotated = await sessionRefreshToken(browser);
    expect(rotated).not.toBe(refreshToken);
    expect(await active(app.client, rotated!, 'refresh_token')).toBe(true);
    app.clock.offset += 3600_000;
    expect((await browser.request(`${app.url}/api`)).status).toBe(200);
    expect(issued).toBe(before + 2);
  });

  it('a refused refresh (the refresh token revoked) ends the token as expiry does: fetch 401 token_expired, requireToken a new flow', async () => {
    const { browser, refreshToken } = await signIn();
    await app.client.revoke(refreshToken, 'refresh_token');
    app.clock.offset = 2 * 3600_000;
    const api = await browser.request(`${app.url}/api`);
    expect(api.status).toBe(401);
    expect(await json(api)).toMatchObject({ kind: 'token_expired' });
    expect(await sessionRefreshToken(browser)).toBeUndefined();
    const again = await browser.request(`${app.url}/protected`);
    expect(again.status).toBe(302);
    expect(new URL(again.headers.get('location')!).href.startsWith(gw.issuer)).toBe(true);
  });

  it('client.refresh(token) for a backend-flow token: the next token, with the rotated refresh token; concurrent calls share one refresh', async () => {
    const token = await app.client.backchannel({ login_hint: gw.hints.approved, scope: `${gw.scope} offline_access` });
    expect(token.refresh_token).toBeDefined();
    const before = issued;
    const [next, same] = await Promise.all([app.client.refresh(token), app.client.refresh(token)]);
    expect(issued).toBe(before + 1);
    expect(same).toEqual(next);
    expect(next.refresh_token).toBeDefined();
    expect(next.refresh_token).not.toBe(token.refresh_token);
    expect(next.access_token).not.toBe(token.access_token);
    expect((await fetch(gw.serviceApi, { headers: { authorization: `Bearer ${next.access_token}` } })).status).toBe(
      200,
    );
    expect((await app.client.refresh(next)).access_token).not.toBe(next.access_token);
  });

  it('a holder of a long-rotated token gets the latest token, not one rotated since (no reuse reaches the gateway)', async () => {
    const t0 = await app.client.backchannel({ login_hint: gw.hints.approved, scope: `${gw.scope} offline_access` });
    const t1 = await app.client.refresh(t0);
    const t2 = await app.client.refresh(t1);
    const before = issued;
    // A request that read t0 long ago (a slow request, a stale session copy) refreshes it now.
    const stale = await app.client.refresh(t0);
    expect(issued).toBe(before);
    expect(stale.refresh_token).toBe(t2.refresh_token);
    expect(stale.access_token).toBe(t2.access_token);
    // The grant is intact: t2's refresh token still works.
    expect((await app.client.refresh(t2)).access_token).not.toBe(t2.access_token);
  });

  it('client.refresh(): a refused refresh token is token_expired; a token without one is no_token', async () => {
    const token = await app.client.backchannel({ login_hint: gw.hints.approved, scope: `${gw.scope} offline_access` });
    await app.client.revoke(token.refresh_token!, 'refresh_token');
    const refusedError = await rejection(app.client.refresh(token));
    expect(refusedError).toBeInstanceOf(NetAuthClientError);
    expect(refusedError).toMatchObject({ kind: 'token_expired', error: 'invalid_grant', status: 401 });
    const plain = await app.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
    expect(plain.refresh_token).toBeUndefined();
    expect(await rejection(app.client.refresh(plain))).toMatchObject({ kind: 'no_token' });
  });

  it('refreshBeforeExpiry must be a whole number of seconds', () => {
    expect(() =>
      createNetAuthClient({ ...clientOptions(gw, app.url, 'secret', { offset: 0 }), refreshBeforeExpiry: -1 }),
    ).toThrow(/refreshBeforeExpiry/);
  });
});

describeNoSecretsInErrors('refresh', { errors: 4, secrets: 20 });
