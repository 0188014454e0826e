import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import type { NextFunction, Request, Response } from 'express';
import { MemoryStore, RedisStore, StoreUnavailableError, type ClientRegistry, type Store } from '../../lib/index.js';
import { ISSUER, SIM_SWAP, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import {
  LOCATION,
  authorize,
  callApi,
  callback,
  codeFor,
  consentForm,
  cookies,
  formTarget,
  localPath,
  location,
  redeem,
  submitConsent,
} from '../helpers/frontend.js';
import { bcAuthorize, pollToken, startBackchannel } from '../helpers/requests.js';
import { RedisServer, freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import { wrapStore } from '../helpers/store-wrapper.js';

/**
 * Issue 6: with Redis unreachable every surface answers "temporarily unavailable" in its own form (JSON 503
 * with Retry-After, a redirect to the application, an HTML error page, a 503 from the guard, never a 401),
 * nothing crashes, and the same gateway works again once Redis is back. One process here; two processes
 * sharing one Redis: two-gateways.test.ts.
 */

const skip = skipRedisTests('the Redis outage tests');

function expectUnavailableJson(res: request.Response): void {
  expect(res.status).toBe(503);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  expect(res.body).toEqual({
    error: 'temporarily_unavailable',
    error_description: 'the service is temporarily unavailable',
  });
}

function expectUnavailablePage(res: request.Response): void {
  expect(res.status).toBe(503);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.text).toContain('<code>temporarily_unavailable</code>');
  // Nothing of the failure itself: no stack, no Redis detail.
  expect(res.text).not.toMatch(/\bat .*\.[jt]s:\d+|Redis|ECONNREFUSED|StoreUnavailable/);
}

function expectRedirectedUnavailable(res: request.Response, state = 'state-123'): void {
  expect(res.status).toBe(302);
  expect(callback(res)).toEqual({
    error: 'temporarily_unavailable',
    error_description: 'the service is temporarily unavailable',
    state,
    iss: ISSUER,
  });
}

describe.skipIf(skip)('Redis down: every surface says temporarily unavailable, then recovers by itself', () => {
  let server: RedisServer;
  let store: RedisStore;
  let gw: TestGateway;
  const reported: unknown[] = [];
  const escaped: unknown[] = [];

  // Made while Redis is up, used while it is down.
  let token: string;
  let code: string;
  let authReqId: string;
  let consent: { cookie: string; pagePath: string; form: ReturnType<typeof consentForm> };

  beforeAll(async () => {
    requireRedisServer();
    server = await RedisServer.start();
    // The test server keeps nothing across its restart: the loss is expected here, not reported.
    store = new RedisStore({
      url: server.url,
      prefix: freshPrefix('netauth-outage'),
      // Room for a loaded machine while Redis is up; a Redis that is down refuses at once.
      timeout: 5000,
      onDataLoss: () => {},
    });
    // Connected (scripts loaded, marker placed) before the first request, as the docs ask of an application.
    await store.open();
    gw = createTestGateway({ store, onError: (error) => reported.push(error) });
    // Anything the router lets through reaches Express's final handler, which logs its stack and drops the connection.
    gw.app.use((error: unknown, _req: Request, _res: Response, next: NextFunction) => {
      escaped.push(error);
      next(error);
    });
  });

  afterAll(async () => {
    await store?.close();
    await server?.destroy();
  });

  it('works while Redis is up', async () => {
    token = (await pollToken(gw.app, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP))).body
      .access_token as string;
    expect((await callApi(gw.app, token)).status).toBe(200);
    code = await codeFor(gw);
    authReqId = await startBackchannel(gw.app, 'tel:+34600000002', LOCATION);
    const start = await authorize(gw.app, { scope: LOCATION });
    const pagePath = localPath(location(start));
    const cookie = cookies(start);
    const page = await request(gw.app).get(pagePath).set('Cookie', cookie);
    expect(page.status).toBe(200);
    consent = { cookie, pagePath, form: consentForm(page.text) };
  });

  it('bc-authorize and token: 503 JSON temporarily_unavailable with Retry-After, not cacheable', async () => {
    await server.stop();
    const started = await bcAuthorize(gw.app, { login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expectUnavailableJson(started);
    expect(started.headers['cache-control']).toBe('no-store');
    expectUnavailableJson(await pollToken(gw.app, authReqId));
    expectUnavailableJson(await redeem(gw.app, { code, redirect_uri: 'https://app.example/callback' }));
  });

  it('the service-API guard: 503, not 401 (the token is not invalid, the service is down)', async () => {
    const res = await callApi(gw.app, token);
    expectUnavailableJson(res);
    expect(res.headers['www-authenticate']).toBeUndefined();
  });

  it('GET /authorize: once client and redirect_uri are validated, a redirect with temporarily_unavailable', async () => {
    expectRedirectedUnavailable(await authorize(gw.app));
    expectRedirectedUnavailable(await authorize(gw.app, { scope: LOCATION, state: 'other' }), 'other');
    // With the consent page's session cookie, whose session cannot be read now.
    expectRedirectedUnavailable(await authorize(gw.app, { scope: LOCATION }, { cookie: consent.cookie }));
    // The client registry is static: an unknown client is still told apart, with the error page and no redirect.
    const unknown = await authorize(gw.app, { client_id: 'nobody' });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.location).toBeUndefined();
  });

  it('the consent page, GET and POST: a 503 HTML error page', async () => {
    expectUnavailablePage(await request(gw.app).get(consent.pagePath).set('Cookie', consent.cookie));
    const { form } = consent;
    const answer = await request(gw.app)
      .post(formTarget(consent.pagePath, form.action))
      .set('Cookie', consent.cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
    expectUnavailablePage(answer);
  });

  it('reports nothing as an internal error (an outage is not a bug), and no error escapes the router', async () => {
    // express-session finishes its work after the response: give it the time to fail, if it does.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reported).toEqual([]);
    expect(escaped).toEqual([]);
  });

  it('the same gateway works again once Redis is back (its data is gone: the test server keeps none)', {
    timeout: 30_000,
  }, async () => {
    await server.restart();
    await vi.waitFor(
      async () =>
        expect((await bcAuthorize(gw.app, { login_hint: 'tel:+34600000001', scope: SIM_SWAP })).status).toBe(200),
      {
        timeout: 15_000,
        interval: 200,
      },
    );
    const fresh = (await pollToken(gw.app, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP))).body
      .access_token as string;
    expect((await callApi(gw.app, fresh)).status).toBe(200);
    const redeemed = await redeem(gw.app, { code: await codeFor(gw), redirect_uri: 'https://app.example/callback' });
    expect(redeemed.status).toBe(200);

    // The consent page too, from a new authorization request.
    const start = await authorize(gw.app, { scope: LOCATION });
    const pagePath = localPath(location(start));
    const cookie = cookies(start);
    const answer = await submitConsent(gw.app, pagePath, cookie, 'allow');
    expect(answer.status).toBe(303);
    expect(callback(answer).code).toBeDefined();
    expect(reported).toEqual([]);
    expect(escaped).toEqual([]);
  });
});

/** The same failures without a Redis: a store or a client registry that fails on demand. */
describe('a failing store or client registry, without Redis', () => {
  it('a session that cannot be read now is left alone: 503 page, and the consent page works on retry', async () => {
    const inner = new MemoryStore({ sweepInterval: 0 });
    let down = false;
    const deleted: string[] = [];
    const store: Store = wrapStore(inner, {
      get: async (kind, id) => {
        if (down) throw new StoreUnavailableError('down');
        return inner.get(kind, id);
      },
      delete: async (kind, id) => {
        // The consent registry's short lock on the subscriber's index is taken and released on every answer.
        if (!(kind === 'consent' && id.includes('.lock|'))) deleted.push(kind);
        return inner.delete(kind, id);
      },
    });
    const gw = createTestGateway({ store });
    const start = await authorize(gw.app, { scope: LOCATION });
    const pagePath = localPath(location(start));
    const cookie = cookies(start);

    down = true;
    expectUnavailablePage(await request(gw.app).get(pagePath).set('Cookie', cookie));
    await new Promise((resolve) => setTimeout(resolve, 50));
    down = false;
    // The read failed, so nothing may be deleted on the way out: the subscriber's pending request survives.
    expect(deleted).toEqual([]);

    const answer = await submitConsent(gw.app, pagePath, cookie, 'allow');
    expect(answer.status).toBe(303);
    expect(callback(answer).code).toBeDefined();
    // Answered: the answer replaces the pending request in the session (for the Back button); nothing is deleted.
    expect(deleted).toEqual([]);
    await gw.netauth.close();
  });

  it('a client registry that is unavailable: /authorize cannot validate the client, so a 503 page and no redirect', async () => {
    const clients: ClientRegistry = {
      find: async () => {
        throw new StoreUnavailableError('registry down');
      },
    };
    const gw = createTestGateway({ clients });
    const res = await authorize(gw.app);
    expectUnavailablePage(res);
    expect(res.headers.location).toBeUndefined();
    // Client authentication cannot happen either: 503, never 401 invalid_client.
    expectUnavailableJson(await bcAuthorize(gw.app, { login_hint: 'tel:+34600000001', scope: SIM_SWAP }));
    expectUnavailableJson(await redeem(gw.app, { code: 'c', redirect_uri: 'https://app.example/callback' }));
    await gw.netauth.close();
  });
});
