import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { memoryLogger } from '../helpers/memory-logger.js';
import { createClient } from '../helpers/node-redis.js';
import { APP1, APP2, CIBA, LOCATION, SECRET, SIM_SWAP, basic, createTestGateway } from '../helpers/gateway.js';
import { bcAuthorize, pollToken, startBackchannel } from '../helpers/requests.js';
import {
  CALLBACK,
  authorize,
  callback,
  consentForm,
  cookies,
  formTarget,
  localPath,
  location,
  pkcePair,
  redeem,
} from '../helpers/frontend.js';
import { KEY_A } from '../helpers/keys.js';
import {
  GRANTS_CLIENTS,
  GRANTS_POLICY,
  JWT_BEARER,
  OFFLINE_AUTH,
  POPULATION,
  SERVICE_AUTH,
  bearerAssertion,
  refresh,
  tokenRequest,
} from '../helpers/grants.js';
import { EVENT_NAMES, MemoryStore, StoreUnavailableError, type NetAuthOptions } from '../../lib/index.js';
import { wrapStore } from '../helpers/store-wrapper.js';
import { EventHub } from '../../lib/ops/events.js';
import { attachLogger } from '../../lib/ops/logging.js';

/**
 * Issue 9, done when: the structured logs of a full run (frontend flow with the consent page, code redemption
 * and replay, CIBA pending / slow_down / approved / denied / expired, introspection, revocation, failed client
 * authentication, rate limiting (on counters whose Redis is unreachable), an internal error) contain none of the secrets, tokens, codes, auth_req_ids,
 * client secrets or phone numbers used, and do contain every event (so an empty log cannot pass).
 */

const PHONES = ['+34600000001', '+34600000002'];
const ALICE = `tel:${PHONES[0]}`;
const BOB = `tel:${PHONES[1]}`;

const FORMATS: Array<[string, Partial<NetAuthOptions>]> = [
  ['opaque access tokens', {}],
  [
    'JWT access tokens and ID tokens',
    { accessTokenFormat: 'jwt', idTokens: true, signingKeys: [KEY_A], pairwiseSalt: 'salt' },
  ],
];

describe.each(FORMATS)('log scan of a full run (%s)', (_name, format) => {
  it('finds every event and none of the secrets, tokens, codes, auth_req_ids or phone numbers', async () => {
    const log = memoryLogger();
    // Everything a log line must never show, collected as the run makes it.
    const secrets = new Set<string>([
      SECRET,
      'other-secret',
      'code-secret',
      APP1,
      APP2,
      ...PHONES,
      ...PHONES.map((p) => p.slice(1)),
      ALICE,
      BOB,
    ]);
    const keep = (...values: Array<string | undefined>) => {
      for (const v of values) if (v !== undefined && v !== '') secrets.add(v);
    };

    const gw = createTestGateway({
      ...format,
      clients: GRANTS_CLIENTS,
      consentPolicy: GRANTS_POLICY,
      logger: log.logger,
      backchannel: {
        // app-2's requests wait for a decision that never comes (polled until expiry); app-1's are approved.
        authorize: (r) => (r.clientId === 'app-2' ? new Promise(() => undefined) : Promise.resolve('approve')),
      },
      rateLimits: {
        authorize: { perAddress: { points: 5, duration: 60 } },
        clientAuthentication: { perClientAndAddress: { failures: 3, duration: 900 } },
        token: { perClient: { points: 12, duration: 60 } },
      },
    });
    // Counters on a Redis client that never connected, the lock-out off (it would fail closed): the request
    // rate is counted in memory, and that is logged (rate.fallback).
    const stalled = createTestGateway({
      ...format,
      logger: log.logger,
      rateLimits: {
        authorize: { perAddress: { points: 5, duration: 60 } },
        clientAuthentication: { perClientAndAddress: false, perAddress: false },
        redis: createClient({ url: 'redis://127.0.0.1:1', disableOfflineQueue: true }),
      },
    });
    await request(stalled.app).get('/apigateway/authorize').query({ client_id: 'app-1' });
    const { app, netauth, clock } = gw;
    const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

    // Frontend flow, consent page, PKCE, openid: allow, redeem, replay.
    const pkce = pkcePair();
    keep(pkce.verifier, pkce.challenge);
    const started = await authorize(app, {
      scope: `openid ${LOCATION}`,
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
      nonce: 'nonce-9f8e7d',
      state: 'state-5a4b3c',
    });
    keep('nonce-9f8e7d', 'state-5a4b3c');
    const cookie = cookies(started);
    keep(...cookie.split('; ').map((c) => c.split('=')[1]));
    const pagePath = localPath(location(started));
    const page = await request(app).get(pagePath).set('Cookie', cookie);
    const form = consentForm(page.text);
    keep(form.interaction, form.csrf);
    const allowed = await request(app)
      .post(formTarget(pagePath, form.action))
      .set('X-Forwarded-For', '10.20.0.1')
      .set('Cookie', cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
    const code = callback(allowed).code!;
    keep(code);
    const redeemed = await redeem(app, { code, redirect_uri: CALLBACK, code_verifier: pkce.verifier });
    expect(redeemed.status).toBe(200);
    keep(redeemed.body.access_token, redeemed.body.id_token);
    // The client's retry within lifetimes.redemptionRetry gets the same answer (redemption.redelivered); a replay
    // after it is refused.
    expect((await redeem(app, { code, redirect_uri: CALLBACK, code_verifier: pkce.verifier })).status).toBe(200);
    clock.advance(31);
    expect((await redeem(app, { code, redirect_uri: CALLBACK, code_verifier: pkce.verifier })).body.error).toBe(
      'invalid_grant',
    );
    // A store whose reply to the consume-and-issue is lost after the step ran (a slow Redis): redemption.unsettled.
    const memory = new MemoryStore();
    const late = createTestGateway({
      ...format,
      logger: log.logger,
      store: wrapStore(memory, {
        consume: async (kind, id, writes) => {
          await memory.consume(kind, id, writes);
          throw new StoreUnavailableError('no reply within the deadline');
        },
      }),
    });
    expect((await pollToken(late.app, await startBackchannel(late.app, ALICE, SIM_SWAP))).status).toBe(503);

    // The consent page refused (Bob's device), and an authorization request flood from one address.
    const other = await authorize(app, { scope: LOCATION }, { ip: '10.20.0.2' });
    const otherCookie = cookies(other);
    const otherPath = localPath(location(other));
    const otherForm = consentForm((await request(app).get(otherPath).set('Cookie', otherCookie)).text);
    keep(otherForm.interaction, otherForm.csrf, ...otherCookie.split('; ').map((c) => c.split('=')[1]));
    await request(app)
      .post(formTarget(otherPath, otherForm.action))
      .set('X-Forwarded-For', '10.20.0.2')
      .set('Cookie', otherCookie)
      .type('form')
      .send({ interaction: otherForm.interaction, csrf: otherForm.csrf, decision: 'deny' });
    for (let i = 0; i < 5; i++) await authorize(app, {}, { ip: '10.20.0.2' });
    expect(callback(await authorize(app, {}, { ip: '10.20.0.2' })).error).toBe('temporarily_unavailable');

    // CIBA: approved at once; pending then slow_down, consent on record, approved; denied; expired.
    const quick = await startBackchannel(app, ALICE, `openid ${SIM_SWAP}`);
    await tick();
    const quickToken = await pollToken(app, quick);
    expect(quickToken.status).toBe(200);
    keep(quick, quickToken.body.access_token, quickToken.body.id_token);

    // Later than Bob's refusal on the page, which would otherwise answer this request too.
    clock.advance(1);
    const waiting = await startBackchannel(app, BOB, LOCATION);
    keep(waiting);
    await tick();
    expect((await pollToken(app, waiting)).body.error).toBe('authorization_pending');
    expect((await pollToken(app, waiting)).body.error).toBe('slow_down');
    await netauth.consent.grant({ clientId: 'app-1', login_hint: BOB, scope: LOCATION });
    clock.advance(10);
    const waited = await pollToken(app, waiting);
    expect(waited.status).toBe(200);
    keep(waited.body.access_token);

    const refused = await startBackchannel(app, `ipport:10.20.0.2`, LOCATION);
    keep(refused);
    await netauth.consent.deny({ clientId: 'app-1', subscriberId: 'sub-bob', scope: LOCATION });
    expect((await pollToken(app, refused)).body.error).toBe('access_denied');

    const forever = await startBackchannel(app, ALICE, SIM_SWAP, APP2);
    keep(forever);
    for (let i = 0; i < 12; i++) {
      clock.advance(5);
      await pollToken(app, forever, APP2);
    }
    // Over app-2's token limit: slow_down (rate limit).
    expect((await pollToken(app, forever, APP2)).body.error).toBe('slow_down');
    const stale = await startBackchannel(app, ALICE, SIM_SWAP);
    keep(stale);
    clock.advance(200);
    expect((await pollToken(app, stale)).body.error).toBe('expired_token');

    // Introspection and revocation; consent withdrawn.
    const introspected = await request(app)
      .post('/apigateway/introspect')
      .set('Authorization', APP1)
      .type('form')
      .send({ token: quickToken.body.access_token });
    expect(introspected.body.active).toBe(true);
    keep(introspected.body.sub);
    expect(
      (
        await request(app)
          .post('/apigateway/revoke')
          .set('Authorization', APP1)
          .type('form')
          .send({ token: quickToken.body.access_token })
      ).status,
    ).toBe(200);
    expect(await netauth.consent.revoke({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION })).toBe(true);

    // The grants beyond the seed's two: a refresh token rotated then reused, client credentials, the JWT bearer grant.
    keep('offline-secret', OFFLINE_AUTH, 'service-secret', SERVICE_AUTH);
    const offline = await startBackchannel(app, ALICE, `${SIM_SWAP} offline_access`, OFFLINE_AUTH);
    const offlineTokens = await pollToken(app, offline, OFFLINE_AUTH);
    keep(offline, offlineTokens.body.access_token, offlineTokens.body.refresh_token);
    const rotated = await refresh(app, offlineTokens.body.refresh_token as string);
    keep(rotated.body.access_token, rotated.body.refresh_token);
    clock.advance(31); // past lifetimes.redemptionRetry: a reuse, not a retry
    expect((await refresh(app, offlineTokens.body.refresh_token as string)).body.error).toBe('invalid_grant');
    const twoLegged = await tokenRequest(app, { grant_type: 'client_credentials', scope: POPULATION }, SERVICE_AUTH);
    keep(twoLegged.body.access_token);
    const assertion = await bearerAssertion(ALICE, 'dpv:FraudPreventionAndDetection number-verification', {
      now: Math.floor(clock.now / 1000),
    });
    const asserted = await tokenRequest(app, { grant_type: JWT_BEARER, assertion });
    expect(asserted.status).toBe(200);
    keep(assertion, asserted.body.access_token);

    // Failed client authentication, then the lock-out, even with the right secret.
    const guesses = ['guess-one-7Yh', 'guess-two-Qw9', 'guess-three-Zp2'];
    keep(...guesses);
    for (const guess of guesses) {
      const header = basic('app-1', guess);
      keep(header);
      const res = await request(app)
        .post('/apigateway/token')
        .set('X-Forwarded-For', '203.0.113.9')
        .set('Authorization', header)
        .type('form')
        .send({ grant_type: CIBA, auth_req_id: quick });
      expect(res.status).toBe(401);
    }
    expect(
      (
        await request(app)
          .post('/apigateway/bc-authorize')
          .set('X-Forwarded-For', '203.0.113.9')
          .set('Authorization', APP1)
          .type('form')
          .send({ login_hint: ALICE, scope: SIM_SWAP })
      ).status,
    ).toBe(429);
    expect(
      (
        await bcAuthorize(
          app,
          { login_hint: BOB, scope: SIM_SWAP, client_secret: SECRET, client_id: 'app-1' },
          basic('app-1', 'another-guess-Kx'),
        )
      ).status,
    ).toBe(400);
    keep('another-guess-Kx', basic('app-1', 'another-guess-Kx'));

    // A developer portal's registration that fails the checks (http: redirect URI): reported, its secret never.
    const insecure = { ...GRANTS_CLIENTS[0]!, redirectUris: ['http://app.example/callback'] };
    const portal = createTestGateway({
      ...format,
      clients: { find: async () => structuredClone(insecure) },
      logger: log.logger,
    });
    expect((await authorize(portal.app, { redirect_uri: 'http://app.example/callback' })).status).toBe(400);

    // Confirmation through the operator's channel (issue 34): the hook fails with an error quoting the number and
    // the code; the event is logged, the error never.
    const confirming = createTestGateway({
      ...format,
      logger: log.logger,
      consentPolicy: GRANTS_POLICY.map((r) =>
        r.basis === 'consent' ? { ...r, confirmation: 'required' as const } : r,
      ),
      sendConsentConfirmation: async (subscriber, code) => {
        throw new Error(`sms-gateway-refused ${subscriber.phoneNumber} ${code}`);
      },
    });
    keep('sms-gateway-refused');
    const confirm = await authorize(confirming.app, { scope: LOCATION });
    const confirmCookie = cookies(confirm);
    const confirmPath = localPath(location(confirm));
    const confirmForm = consentForm((await request(confirming.app).get(confirmPath).set('Cookie', confirmCookie)).text);
    keep(confirmForm.interaction, confirmForm.csrf);
    const unsent = await request(confirming.app)
      .post(formTarget(confirmPath, confirmForm.action))
      .set('X-Forwarded-For', '10.20.0.1')
      .set('Cookie', confirmCookie)
      .type('form')
      .send({ interaction: confirmForm.interaction, csrf: confirmForm.csrf, decision: 'allow' });
    expect(unsent.status).toBe(503);

    // An internal error (a listener failing) goes to the log too.
    netauth.events.on('token.issued', () => {
      throw new Error('listener failed on purpose');
    });
    const last = await pollToken(app, await startBackchannel(app, BOB, SIM_SWAP));
    keep(last.body.access_token);

    // The operator's levers: their events name the subscriber or client and the reason, nothing else.
    await netauth.subscribers.revoke('sub-bob', { reason: 'sim_swap' });
    await netauth.clients.revoke('code-only', { reason: 'offboarded' });

    await new Promise((resolve) => setTimeout(resolve, 20));
    const text = log.text();
    const lines = log.lines();

    // The log is there: every event, the internal error, the package's binding.
    const logged = new Set(lines.map((l) => l.event));
    for (const name of EVENT_NAMES) expect(logged, name).toContain(name);
    expect(
      lines.some(
        (l) => l.msg === 'internal error' && (l.error as { message: string }).message === 'listener failed on purpose',
      ),
    ).toBe(true);
    expect(lines.every((l) => l.lib === 'express-netauth')).toBe(true);
    expect(lines.length).toBeGreaterThan(60);

    // And nothing of what must never be logged.
    expect(secrets.size).toBeGreaterThan(30);
    for (const secret of secrets) {
      expect(secret.length, `short secret ${secret}`).toBeGreaterThanOrEqual(8);
      // A number only as a number: not digits inside another one (a timestamp, a duration).
      const found = /^\+?\d+$/.test(secret)
        ? new RegExp(`(?<![\\d.])${secret.replace('+', '\\+')}(?!\\d)`).test(text)
        : text.includes(secret);
      expect(found, `log contains ${secret}`).toBe(false);
    }
  });
});

describe('logging', () => {
  it('redaction is the second line of defence: sensitive fields are censored should a payload ever carry them', () => {
    const log = memoryLogger();
    const hub = new EventHub(() => undefined);
    attachLogger(log.logger, hub);
    hub.emit('ciba.requested', {
      clientId: 'app-1',
      subscriberId: 'sub-1',
      purpose: 'P',
      scopes: ['s'],
      identifiedBy: 'tel',
      ...({
        access_token: 'AT-1234567',
        auth_req_id: 'ARI-1234567',
        phoneNumber: '+34699999999',
        nested: { code: 'CODE-1234567', client_secret: 'CS-1234567' },
      } as object),
    });
    const text = log.text();
    for (const secret of ['AT-1234567', 'ARI-1234567', '+34699999999', 'CODE-1234567', 'CS-1234567'])
      expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
    expect(log.lines()[0]).toMatchObject({
      level: 30,
      event: 'ciba.requested',
      msg: 'ciba.requested',
      clientId: 'app-1',
    });
  });

  it('levels: failures and limits are warnings, timing is debug (and not listened to when debug is off)', async () => {
    const log = memoryLogger();
    log.logger.level = 'info';
    const { app, netauth } = createTestGateway({ logger: log.logger, signingKeys: [KEY_A] });
    await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, basic('app-1', 'nope-nope'));
    await startBackchannel(app, ALICE, SIM_SWAP);
    // The events' lines (the fixture's start-up warnings, its http: issuer among them, are options.test.ts's).
    const lines = log.lines().filter((line) => line.event !== undefined);
    expect(lines.map((l) => [l.event, l.level])).toEqual([
      ['client.authentication_failed', 40],
      ['ciba.requested', 30],
    ]);
    expect((netauth.events as unknown as { has(name: string): boolean }).has('request.completed')).toBe(false);
  });

  it('internal errors: type and message only; with onError given, both are told', async () => {
    const log = memoryLogger();
    const told: unknown[] = [];
    const { app, netauth } = createTestGateway({ logger: log.logger, onError: (e) => told.push(e) });
    netauth.events.on('ciba.requested', () => {
      throw new TypeError('boom');
    });
    expect((await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP })).status).toBe(200);
    expect(told).toHaveLength(1);
    const line = log.lines().find((l) => l.msg === 'internal error');
    expect(line).toMatchObject({ level: 50, error: { type: 'TypeError', message: 'boom' } });
    expect(JSON.stringify(line)).not.toContain('stack');
  });
});
