import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { Registry, register as globalRegistry } from 'prom-client';
import { createClient } from '../helpers/node-redis.js';
import { APP1, APP2, CIBA, LOCATION, SIM_SWAP, basic, createTestGateway } from '../helpers/gateway.js';
import { bcAuthorize, pollToken, startBackchannel } from '../helpers/requests.js';
import { CALLBACK, answerConsent, authorize, callback, codeFor, redeem } from '../helpers/frontend.js';

const ALICE = 'tel:+34600000001';
const BOB = 'tel:+34600000002';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format, as samples. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample with exactly these labels (0 when absent, as Prometheus would read it). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter(
    (s) =>
      s.name === name &&
      JSON.stringify(Object.entries(s.labels).sort()) === JSON.stringify(Object.entries(labels).sort()),
  );
  if (found.length > 1) throw new Error(`several samples for ${name}`);
  return found[0]?.value ?? 0;
}

describe('metrics router', () => {
  it('after a full flow the counters and the latency histogram show what happened', async () => {
    const gw = createTestGateway({
      rateLimits: {
        // The window outlasts the clock's advances below: the counters keep the gateway's time.
        bcAuthorize: { perClient: { points: 5, duration: 600 } },
        clientAuthentication: { perClientAndAddress: { failures: 1, duration: 900 } },
      },
    });
    gw.app.use('/metrics', gw.netauth.metricsRouter());
    const { app, netauth, clock } = gw;

    // Frontend: one code without consent, redeemed and replayed; one through the consent page.
    const code = await codeFor(gw);
    expect((await redeem(app, { code, redirect_uri: CALLBACK })).status).toBe(200);
    clock.advance(31);
    expect((await redeem(app, { code, redirect_uri: CALLBACK })).status).toBe(400);
    const allowed = await answerConsent(gw, await authorize(app, { scope: LOCATION }), 'allow');
    expect((await redeem(app, { code: callback(allowed).code!, redirect_uri: CALLBACK })).status).toBe(200);

    // CIBA: pending, slow_down, approved (consent was given on the page); denied; expired; rate limited.
    const approved = await startBackchannel(app, ALICE, LOCATION);
    const waiting = await startBackchannel(app, BOB, LOCATION);
    const refused = await startBackchannel(app, BOB, LOCATION, APP1);
    expect((await pollToken(app, waiting)).body.error).toBe('authorization_pending');
    expect((await pollToken(app, waiting)).body.error).toBe('slow_down');
    expect((await pollToken(app, approved)).status).toBe(200);
    await netauth.consent.deny({ clientId: 'app-1', login_hint: BOB, scope: LOCATION });
    expect((await pollToken(app, refused)).body.error).toBe('access_denied');
    const expired = await startBackchannel(app, ALICE, SIM_SWAP, APP2);
    clock.advance(200);
    expect((await pollToken(app, expired, APP2)).body.error).toBe('expired_token');
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(429);

    // Revocation, failed client authentication, then the lock-out.
    const token = (await pollToken(app, await startBackchannel(app, ALICE, SIM_SWAP, APP2), APP2)).body
      .access_token as string;
    expect(
      (await request(app).post('/apigateway/revoke').set('Authorization', APP2).type('form').send({ token })).status,
    ).toBe(200);
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, basic('app-2', 'wrong'))).status).toBe(401);
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, basic('nobody', 'wrong'))).status).toBe(401);
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, APP2)).status).toBe(429);

    // request.completed comes with the response's 'close', which may follow the client's receipt.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const scrape = await request(app).get('/metrics');
    expect(scrape.status).toBe(200);
    expect(scrape.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const m = parse(scrape.text);
    const app1 = { client_id: 'app-1' };
    const app2 = { client_id: 'app-2' };

    expect(value(m, 'netauth_authorization_requests_total', { ...app1, consent_page: 'false' })).toBe(1);
    expect(value(m, 'netauth_authorization_requests_total', { ...app1, consent_page: 'true' })).toBe(1);
    expect(value(m, 'netauth_consent_decisions_total', { ...app1, decision: 'granted', via: 'page' })).toBe(1);
    expect(value(m, 'netauth_consent_decisions_total', { ...app1, decision: 'denied', via: 'api' })).toBe(1);
    expect(value(m, 'netauth_authorization_codes_total', { ...app1, outcome: 'issued' })).toBe(2);
    expect(value(m, 'netauth_authorization_codes_total', { ...app1, outcome: 'consumed' })).toBe(2);
    expect(value(m, 'netauth_authorization_codes_total', { ...app1, outcome: 'replayed' })).toBe(1);
    expect(value(m, 'netauth_ciba_total', { ...app1, outcome: 'requested' })).toBe(5);
    expect(value(m, 'netauth_ciba_total', { ...app2, outcome: 'requested' })).toBe(2);
    expect(value(m, 'netauth_ciba_total', { ...app1, outcome: 'slow_down' })).toBe(1);
    expect(value(m, 'netauth_ciba_total', { ...app1, outcome: 'approved' })).toBe(1);
    expect(value(m, 'netauth_ciba_total', { ...app2, outcome: 'approved' })).toBe(1);
    expect(value(m, 'netauth_ciba_total', { ...app1, outcome: 'denied' })).toBe(1);
    expect(value(m, 'netauth_ciba_total', { ...app2, outcome: 'expired' })).toBe(1);
    expect(
      value(m, 'netauth_tokens_issued_total', { ...app1, grant_type: 'authorization_code', format: 'opaque' }),
    ).toBe(2);
    expect(value(m, 'netauth_tokens_issued_total', { ...app1, grant_type: CIBA, format: 'opaque' })).toBe(1);
    expect(value(m, 'netauth_tokens_issued_total', { ...app2, grant_type: CIBA, format: 'opaque' })).toBe(1);
    expect(value(m, 'netauth_tokens_revoked_total', { ...app1, reason: 'code_replay' })).toBe(1);
    expect(value(m, 'netauth_tokens_revoked_total', { ...app2, reason: 'revocation_request' })).toBe(1);
    expect(
      value(m, 'netauth_client_authentication_failures_total', {
        endpoint: 'bc-authorize',
        reason: 'invalid_credentials',
      }),
    ).toBe(2);
    expect(value(m, 'netauth_rate_limited_total', { endpoint: 'bc-authorize', limit: 'client' })).toBe(1);
    expect(value(m, 'netauth_rate_limited_total', { endpoint: 'bc-authorize', limit: 'client_authentication' })).toBe(
      1,
    );

    expect(value(m, 'netauth_requests_total', { endpoint: 'token', grant_type: CIBA, outcome: 'ok' })).toBe(2);
    expect(value(m, 'netauth_requests_total', { endpoint: 'token', grant_type: CIBA, outcome: 'slow_down' })).toBe(1);
    expect(
      value(m, 'netauth_requests_total', {
        endpoint: 'token',
        grant_type: 'authorization_code',
        outcome: 'invalid_grant',
      }),
    ).toBe(1);
    expect(
      value(m, 'netauth_requests_total', {
        endpoint: 'bc-authorize',
        grant_type: '',
        outcome: 'temporarily_unavailable',
      }),
    ).toBe(2);
    expect(
      value(m, 'netauth_requests_total', { endpoint: 'bc-authorize', grant_type: '', outcome: 'invalid_client' }),
    ).toBe(2);
    expect(value(m, 'netauth_requests_total', { endpoint: 'consent', grant_type: '', outcome: 'ok' })).toBe(2);
    // Every response timed: the histogram's count per endpoint is that endpoint's responses.
    const tokenResponses = m
      .filter((s) => s.name === 'netauth_requests_total' && s.labels.endpoint === 'token')
      .reduce((n, s) => n + s.value, 0);
    expect(tokenResponses).toBe(9);
    expect(value(m, 'netauth_request_duration_seconds_count', { endpoint: 'token' })).toBe(tokenResponses);
    expect(value(m, 'netauth_request_duration_seconds_bucket', { endpoint: 'token', le: '+Inf' })).toBe(tokenResponses);
    expect(value(m, 'netauth_request_duration_seconds_sum', { endpoint: 'token' })).toBeGreaterThan(0);
    // Nothing unbounded in any label: no unknown client id, no token, no subscriber.
    expect(scrape.text).not.toMatch(/nobody|sub-alice|sub-bob|\+346/);
    expect(scrape.text).not.toContain(token);
  });

  it('has a Registry of its own (never the global one), or the one given; client ids can be left out', async () => {
    const gw = createTestGateway();
    const router = gw.netauth.metricsRouter();
    gw.app.use('/metrics', router);
    const registry = new Registry();
    gw.app.use('/custom', gw.netauth.metricsRouter({ registry, prefix: 'gw_', clientIdLabel: false }));
    await pollToken(gw.app, await startBackchannel(gw.app, ALICE, SIM_SWAP));

    expect(globalRegistry.getSingleMetric('netauth_tokens_issued_total')).toBeUndefined();
    expect(
      value(parse((await request(gw.app).get('/metrics')).text), 'netauth_tokens_issued_total', {
        client_id: 'app-1',
        grant_type: CIBA,
        format: 'opaque',
      }),
    ).toBe(1);
    expect(
      value(parse(await registry.metrics()), 'gw_tokens_issued_total', { grant_type: CIBA, format: 'opaque' }),
    ).toBe(1);
    expect((await request(gw.app).post('/metrics')).status).toBe(405);
  });

  it('counts the rate-limit operations an instance answered alone because the shared counters failed', async () => {
    // A Redis client that never connected: every count falls back to this process's memory.
    // The lock-out off: it fails closed rather than counting in memory.
    const redis = createClient({ url: 'redis://127.0.0.1:1', disableOfflineQueue: true });
    const lockout = { perClientAndAddress: false, perAddress: false } as const;
    const gw = createTestGateway({ rateLimits: { redis, clientAuthentication: lockout } });
    gw.app.use('/metrics', gw.netauth.metricsRouter());
    expect((await bcAuthorize(gw.app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    const m = parse((await request(gw.app).get('/metrics')).text);
    // Told once when it started (its first operation); the rest go with the next report (a minute later, or when Redis is back).
    expect(value(m, 'netauth_rate_limit_fallback_operations_total', { cause: 'unavailable' })).toBe(1);
    expect(value(m, 'netauth_rate_limit_fallback_operations_total', { cause: 'error' })).toBe(0);
  });

  it('costs nothing until it is created: no listener, no timing', () => {
    const gw = createTestGateway();
    const events = gw.netauth.events as unknown as { has(name: string): boolean };
    expect(events.has('request.completed')).toBe(false);
    gw.netauth.metricsRouter();
    expect(events.has('request.completed')).toBe(true);
  });
});
