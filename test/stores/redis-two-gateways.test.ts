import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as client from 'openid-client';
import { APP1, CIBA, ISSUER, SIM_SWAP } from '../helpers/gateway.js';
import { CALLBACK, LOCATION, consentForm } from '../helpers/frontend.js';
import { RedisServer, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import {
  FIXTURE_STARTUP_WARNINGS,
  startGatewayProcess,
  stopGatewayProcesses,
  type GatewayProcess,
} from '../helpers/gateway-process.js';
import {
  browser,
  callApi,
  codeFrom,
  consentAdmin,
  form,
  on,
  redeem,
  relyingParty,
  sessionCookie,
  throughConsentPage,
} from '../helpers/fleet.js';

/**
 * Issue 6, "done when": two gateway processes (test/helpers/gateway-main.ts) sharing one real Redis, as two
 * instances behind a load balancer. They share the issuer and consentPage.cookieSecret, nothing else.
 * The relying party is openid-client with endpoints pinned to one instance or the other.
 */

const skip = skipRedisTests('the two-gateway Redis test');

describe.skipIf(skip)('two gateway processes sharing one Redis', () => {
  let redis: RedisServer;
  let a: GatewayProcess;
  let b: GatewayProcess;

  beforeAll(async () => {
    requireRedisServer();
    redis = await RedisServer.start();
    const env = { REDIS_URL: redis.url, NETAUTH_COOKIE_SECRET: randomBytes(24).toString('base64url') };
    [a, b] = await Promise.all([startGatewayProcess('A', env), startGatewayProcess('B', env)]);
  }, 40_000);

  afterAll(async () => {
    await stopGatewayProcesses();
    await redis?.destroy();
  });

  it('frontend flow: authorize on A, consent page shown by B and answered on A, code redeemed on B, token used on A', async () => {
    const config = relyingParty(a, b);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: LOCATION,
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });

    const start = await browser(url.href);
    expect(start.status).toBe(302);
    expect(start.headers.get('x-netauth-instance')).toBe('A');
    // The session A wrote is read by B: same Redis, same cookie secret.
    const { page, answer } = await throughConsentPage(start, b, a);
    expect(page.status).toBe(200);
    expect(page.headers.get('x-netauth-instance')).toBe('B');
    expect(answer.status).toBe(303);
    expect(answer.headers.get('x-netauth-instance')).toBe('A');

    const tokens = await client.authorizationCodeGrant(config, new URL(answer.headers.get('location')!), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.scope).toBe(LOCATION);
    const api = await fetch(`${a.url}/location`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    expect(api.status).toBe(200);
    expect(await api.json()).toEqual({ subscriber: 'sub-alice' });
  });

  it('backend flow: auth_req_id created on A, pending on B, consent recorded out-of-band on A, token polled on B', async () => {
    const config = relyingParty(a, b);
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'tel:+34600000002',
      scope: LOCATION,
    });

    const pending = await fetch(`${b.url}/apigateway/token`, {
      ...form({ grant_type: CIBA, auth_req_id: started.auth_req_id }),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: APP1 },
    });
    expect(pending.status).toBe(400);
    expect(await pending.json()).toEqual({ error: 'authorization_pending', error_description: expect.any(String) });

    const granted = await consentAdmin(a, 'grant', {
      clientId: 'app-1',
      login_hint: 'tel:+34600000002',
      scope: LOCATION,
    });
    expect(granted.status).toBe(200);

    // openid-client waits `interval` (1 s) before each poll, so B sees no slow_down.
    const tokens = await client.pollBackchannelAuthenticationGrant(config, started);
    expect(tokens.scope).toBe(LOCATION);
    const api = await fetch(`${b.url}/location`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    expect(await api.json()).toEqual({ subscriber: 'sub-bob' });
  });

  it('50 parallel redemptions of one code over both processes: exactly one token, the same in every answer', async () => {
    const code = await codeFrom(a);
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => redeem(i % 2 === 0 ? a : b, code)));
    const bodies = await Promise.all(responses.map((r) => r.json() as Promise<Record<string, string>>));

    // The client's duplicates within lifetimes.redemptionRetry get the one answer again, on either instance.
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    const tokens = new Set(bodies.map((body) => body.access_token));
    expect(tokens.size).toBe(1);
    expect(new Set(responses.map((r) => r.headers.get('x-netauth-instance')))).toEqual(new Set(['A', 'B']));
    for (const instance of [a, b]) expect((await callApi(instance, [...tokens][0]!)).status).toBe(200);
  });

  it('Redis stopped: both answer temporarily unavailable on every surface; Redis started again: both work, same processes', {
    timeout: 40_000,
  }, async () => {
    // Before: a token, and a consent page waiting (prompt=consent asks again although consent is on record).
    const before = await redeem(a, await codeFrom(b));
    const token = ((await before.json()) as { access_token: string }).access_token;
    const start = await browser(
      `${a.url}/apigateway/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app-1', redirect_uri: CALLBACK, scope: LOCATION, prompt: 'consent', state: 's1' })}`,
    );
    const cookie = sessionCookie(start);
    const pageUrl = start.headers.get('location')!;
    const fields = consentForm(await (await browser(on(b, pageUrl), { headers: { Cookie: cookie } })).text());

    await redis.stop();

    for (const instance of [a, b]) {
      const json = [
        await fetch(`${instance.url}/apigateway/bc-authorize`, {
          ...form({ login_hint: 'tel:+34600000001', scope: SIM_SWAP }),
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: APP1 },
        }),
        await redeem(instance, 'any-code'),
        // The guard: 503, not 401; the token is fine, the service is not.
        await callApi(instance, token),
      ];
      for (const res of json) {
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(res.headers.get('x-netauth-instance')).toBe(instance.name);
        expect(await res.json()).toMatchObject({ error: 'temporarily_unavailable' });
      }

      const authorize = await browser(
        `${instance.url}/apigateway/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app-1', redirect_uri: CALLBACK, scope: SIM_SWAP, state: 's2' })}`,
      );
      expect(authorize.status).toBe(302);
      expect(Object.fromEntries(new URL(authorize.headers.get('location')!).searchParams)).toMatchObject({
        error: 'temporarily_unavailable',
        state: 's2',
        iss: ISSUER,
      });

      const pages = [
        await browser(on(instance, pageUrl), { headers: { Cookie: cookie } }),
        await browser(on(instance, new URL(fields.action, pageUrl)), {
          ...form({ interaction: fields.interaction, csrf: fields.csrf, decision: 'allow' }),
          headers: { Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' },
        }),
      ];
      for (const page of pages) {
        expect(page.status).toBe(503);
        expect(page.headers.get('content-type')).toMatch(/^text\/html/);
        expect(await page.text()).toContain('<code>temporarily_unavailable</code>');
      }
    }

    await redis.restart();
    // Each process reconnects by itself (backoff up to about 2 s).
    for (const instance of [a, b]) {
      await vi.waitFor(async () => expect((await redeem(instance, 'unknown')).status).toBe(400), {
        timeout: 15_000,
        interval: 200,
      });
    }
    // Redis came back empty (the test server keeps nothing): both instances say so, and new flows work across
    // both again.
    for (const instance of [a, b]) {
      await vi.waitFor(() => expect(instance.reports).toEqual([{ dataLoss: redis.address }]), {
        timeout: 15_000,
        interval: 100,
      });
    }
    const config = relyingParty(b, a);
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'tel:+34600000001',
      scope: SIM_SWAP,
    });
    const polled = await client.pollBackchannelAuthenticationGrant(config, started);
    expect((await callApi(b, polled.access_token)).status).toBe(200);
    const redeemed = await redeem(b, await codeFrom(a));
    expect(redeemed.status).toBe(200);
  });

  it('neither process crashed, restarted or printed a stack trace', () => {
    for (const instance of [a, b]) {
      expect(instance.alive).toBe(true);
      // Redis stopped above: each instance said so once (NETAUTH_STORE_UNAVAILABLE), and printed nothing else
      // after the fixture's start-up warnings (its http: issuer and unconfirmed consent rule, on purpose).
      const lines = instance.stderr.split('\n').filter((line) => line !== '' && !FIXTURE_STARTUP_WARNINGS.test(line));
      expect(lines.filter((line) => !line.includes('NETAUTH_STORE_UNAVAILABLE'))).toEqual([]);
      expect(lines.length).toBeLessThanOrEqual(1);
    }
  });
});
