import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { operatorChannel } from '../../helpers/operator-channel.js';
import { MemoryStore, createNetAuth, type NetAuthOptions, type Store } from '../../../lib/index.js';
import { CLIENTS, ISSUER, POLICY, SUBSCRIBERS, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  fromDevice,
  CALLBACK,
  LOCATION,
  authorize,
  callback,
  consentForm,
  cookies,
  localPath,
  location,
  redeem,
} from '../../helpers/frontend.js';
import { recordEvents } from '../../helpers/events.js';
import { skipRedisTests, useRedisStore } from '../../helpers/redis-server.js';

/**
 * Issue 34, confirmation through the operator's channel: a consent rule with `confirmation: 'required'` records
 * consent only with the one-time code `sendConsentConfirmation` sent, driven over HTTP through the real router.
 */

/** The fixture's policy with confirmation required for the consent-based pair. */
const CONFIRMED_POLICY = POLICY.map((rule) =>
  rule.basis === 'consent' ? { ...rule, confirmation: 'required' as const } : rule,
);

function gateway(options: Partial<NetAuthOptions> = {}) {
  const sms = operatorChannel();
  const errors: unknown[] = [];
  const gw = createTestGateway({
    consentPolicy: CONFIRMED_POLICY,
    sendConsentConfirmation: sms.send,
    onError: (error) => errors.push(error),
    ...options,
  });
  return { gw, sms, errors };
}

/** GET /authorize for the consent scope, then the consent page. */
async function open(gw: TestGateway) {
  const start = await authorize(gw.app, { scope: LOCATION });
  expect(start.status).toBe(302);
  const cookie = cookies(start);
  const pagePath = localPath(location(start));
  const page = await request(gw.app).get(pagePath).set('Cookie', cookie);
  expect(page.status).toBe(200);
  return { cookie, pagePath, page, form: consentForm(page.text) };
}

type Opened = Awaited<ReturnType<typeof open>>;

function submit(gw: TestGateway, opened: Opened, fields: Record<string, string>) {
  const { form, cookie } = opened;
  return fromDevice(request(gw.app).post('/apigateway/consent'))
    .set('Cookie', cookie)
    .type('form')
    .send({ interaction: form.interaction, csrf: form.csrf, ...fields });
}

/** Allow on the consent page: the code is sent and the browser is sent back to the page, which asks for it. */
async function allow(gw: TestGateway, opened: Opened) {
  const res = await submit(gw, opened, { decision: 'allow' });
  expect(res.status).toBe(303);
  expect(localPath(location(res))).toBe(opened.pagePath);
  return request(gw.app).get(opened.pagePath).set('Cookie', opened.cookie);
}

describe('start-up: confirmation needs a hook to send the code', () => {
  const base = { issuer: ISSUER, clients: CLIENTS, subscribers: SUBSCRIBERS, pairwiseSalt: 'salt' };

  it('a rule requiring confirmation with no sendConsentConfirmation is an error naming the option and the fix', () => {
    expect(() => createNetAuth({ ...base, consentPolicy: CONFIRMED_POLICY })).toThrow(
      "consent policy rule dpv:FraudPreventionAndDetection#device-location: confirmation: 'required' needs the " +
        'sendConsentConfirmation option, and none is configured; pass sendConsentConfirmation: async (subscriber, ' +
        "code, context) => { /* your SMS or push */ }, or set confirmation: 'off'",
    );
  });

  it('refuses confirmation on a rule that is not consent, an unknown setting, a hook that is not a function', () => {
    const send = async () => {};
    const onSimSwap = POLICY.map((r) => (r.scope === 'sim-swap' ? { ...r, confirmation: 'required' as const } : r));
    expect(() => createNetAuth({ ...base, consentPolicy: onSimSwap, sendConsentConfirmation: send })).toThrow(
      "basis is 'legitimate-interest'",
    );
    const odd = POLICY.map((r) => ({ ...r, confirmation: 'always' as unknown as 'off' }));
    expect(() => createNetAuth({ ...base, consentPolicy: odd })).toThrow("confirmation must be 'off' or 'required'");
    expect(() =>
      createNetAuth({ ...base, consentPolicy: POLICY, sendConsentConfirmation: 'sms' as unknown as typeof send }),
    ).toThrow('sendConsentConfirmation');
    expect(() => createNetAuth({ ...base, consentPolicy: POLICY, consentConfirmation: { maxAttempts: 0 } })).toThrow(
      'consentConfirmation.maxAttempts must be a whole number of attempts from 1 to 10',
    );
    expect(() => createNetAuth({ ...base, consentPolicy: POLICY, consentConfirmation: { tries: 3 } as never })).toThrow(
      'consentConfirmation.tries',
    );
  });

  it("confirmation: 'off' (and no setting) keeps the page as it was: Allow issues a code at once", async () => {
    const gw = createTestGateway({
      consentPolicy: POLICY.map((r) => ({ ...r, confirmation: 'off' as const })),
    });
    const opened = await open(gw);
    expect(opened.page.text).not.toContain('name="code"');
    const res = await submit(gw, opened, { decision: 'allow' });
    expect(callback(res).code).toBeDefined();
  });
});

describe('confirmation through the operator channel', () => {
  it('Allow sends a 6-digit code through the hook, the page asks for it, the right code issues the authorization code', async () => {
    const { gw, sms } = gateway();
    const opened = await open(gw);
    // The consent page itself sends nothing: only Allow does.
    expect(sms.messages).toHaveLength(0);
    const codePage = await allow(gw, opened);
    expect(sms.messages).toHaveLength(1);
    const [message] = sms.messages;
    expect(message!.subscriber).toEqual({ id: 'sub-alice', phoneNumber: '+34600000001' });
    expect(message!.code).toMatch(/^[0-9]{6}$/);
    expect(message!.context).toMatchObject({
      kind: 'code',
      clientId: 'app-1',
      clientName: 'Fraud Checker',
      purpose: 'FraudPreventionAndDetection',
      scopes: ['device-location'],
      descriptions: [],
      expiresIn: 300,
    });

    // The code page: a labelled field, the same hidden fields, Confirm and Deny (Deny needs no code).
    expect(codePage.status).toBe(200);
    expect(codePage.text).toContain('<label for="code">Confirmation code</label>');
    expect(codePage.text).toMatch(/<input id="code" class="code" name="code" [^>]*autocomplete="one-time-code"/);
    expect(codePage.text).toContain('aria-describedby="code-hint"');
    expect(codePage.text).toMatch(/value="deny" formnovalidate>Deny</);
    expect(codePage.text).not.toMatch(/<script/i);
    expect(consentForm(codePage.text)).toEqual(opened.form);
    expect(codePage.headers['content-security-policy']).toContain("form-action 'self' https://app.example");
    // Neither the number nor the code is on the page (a background app may read it).
    expect(codePage.text).not.toContain('600000001');
    expect(codePage.text).not.toContain(message!.code);

    // Spaces as a person types them are fine.
    const code = message!.code;
    const done = await submit(gw, opened, { decision: 'allow', code: `${code.slice(0, 3)} ${code.slice(3)}` });
    expect(done.status).toBe(303);
    expect(`${location(done).origin}${location(done).pathname}`).toBe(CALLBACK);
    const token = await redeem(gw.app, { code: callback(done).code, redirect_uri: CALLBACK });
    expect(token.status).toBe(200);

    // Single use: the same code again finds the request answered.
    const again = await submit(gw, opened, { decision: 'allow', code });
    expect(again.status).toBe(403);
    expect(again.headers.location).toBeUndefined();
  });

  it('a scripted Allow without the code never gets an authorization code, however often it presses', async () => {
    const { gw, sms } = gateway();
    const opened = await open(gw);
    for (let i = 0; i < 3; i++) {
      const res = await submit(gw, opened, { decision: 'allow' });
      expect(res.status).toBe(303);
      expect(location(res).href.startsWith(CALLBACK)).toBe(false);
    }
    // One message: a second Allow while a code is out sends none.
    expect(sms.messages).toHaveLength(1);
    // A code typed before any was sent is not checked: the browser goes back to the page.
    const fresh = await open(gw);
    const early = await submit(gw, fresh, { decision: 'allow', code: '123456' });
    expect(early.status).toBe(303);
    expect(localPath(location(early))).toBe(fresh.pagePath);
  });

  it('the code is kept only as an HMAC in the store, never in the clear', async () => {
    const records: string[] = [];
    const store = new MemoryStore();
    const spy: Store = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if ((name === 'put' || name === 'add') && typeof value === 'function') {
          return (...args: unknown[]) => {
            records.push(JSON.stringify(args));
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const { gw, sms } = gateway({ store: spy });
    const opened = await open(gw);
    await allow(gw, opened);
    const code = sms.last();
    const written = records.join('\n');
    expect(written).toContain(`${opened.form.interaction}:code`);
    expect(written).toMatch(/"hash":"[A-Za-z0-9_-]{43}","salt":"[A-Za-z0-9_-]{22}"/);
    expect(written).not.toMatch(new RegExp(`\\b${code}\\b`));
  });

  it('a wrong code: 303 to the page (Post/Redirect/Get), which says so once, with the attempts left; then the right one still works', async () => {
    const { gw, sms } = gateway();
    const events = recordEvents(gw.netauth);
    const opened = await open(gw);
    await allow(gw, opened);
    const code = sms.last();
    const wrong = code === '000000' ? '111111' : '000000';
    const res = await submit(gw, opened, { decision: 'allow', code: wrong });
    // A redirect, not a page: Back and reload land on a GET, never on "confirm form resubmission".
    expect(res.status).toBe(303);
    expect(localPath(location(res))).toBe(opened.pagePath);
    const shown = await request(gw.app).get(opened.pagePath).set('Cookie', opened.cookie);
    expect(shown.status).toBe(200);
    expect(shown.headers['content-type']).toMatch(/^text\/html/);
    expect(shown.text).toContain('role="alert">That code is not right. Attempts left: 2.</p>');
    expect(shown.text).toContain('aria-describedby="code-hint code-error" aria-invalid="true"');
    // Said once: a reload shows the form without it.
    const reloaded = await request(gw.app).get(opened.pagePath).set('Cookie', opened.cookie);
    expect(reloaded.text).toContain('name="code"');
    expect(reloaded.text).not.toContain('role="alert"');
    // Not the code's digits: no attempt is spent on it.
    const typo = await submit(gw, opened, { decision: 'allow', code: '12 34' });
    expect(typo.status).toBe(303);
    const typoShown = await request(gw.app).get(opened.pagePath).set('Cookie', opened.cookie);
    expect(typoShown.text).toContain('Type the 6 digits of the code.');
    const done = await submit(gw, opened, { decision: 'allow', code });
    expect(callback(done).code).toBeDefined();
    expect(events.of('consent.confirmation_failed')).toEqual([
      {
        for: 'consent',
        clientId: 'app-1',
        subscriberId: 'sub-alice',
        purpose: 'FraudPreventionAndDetection',
        scopes: ['device-location'],
        reason: 'wrong_code',
      },
    ]);
  });

  it('three wrong codes end the interaction: access_denied on the redirect_uri, and the right code is refused after', async () => {
    const { gw, sms } = gateway();
    const events = recordEvents(gw.netauth);
    const opened = await open(gw);
    await allow(gw, opened);
    const code = sms.last();
    const wrong = (n: number) => String((Number(code) + n) % 1_000_000).padStart(6, '0');
    expect((await submit(gw, opened, { decision: 'allow', code: wrong(1) })).status).toBe(303);
    expect((await submit(gw, opened, { decision: 'allow', code: wrong(2) })).status).toBe(303);
    const last = await submit(gw, opened, { decision: 'allow', code: wrong(3) });
    expect(last.status).toBe(303);
    expect(callback(last)).toEqual({
      error: 'access_denied',
      error_description: 'too many wrong confirmation codes',
      state: 'state-123',
      iss: ISSUER,
    });
    const after = await submit(gw, opened, { decision: 'allow', code });
    expect(after.status).toBe(403);
    expect(after.headers.location).toBeUndefined();
    expect(events.of('consent.confirmation_failed').map((e) => e.reason)).toEqual([
      'wrong_code',
      'wrong_code',
      'attempts_exhausted',
    ]);
    // No refusal is recorded: the subscriber did not deny, the next request asks again.
    expect(events.of('consent.denied')).toEqual([]);
  });

  it('an expired code (the injected clock) ends the interaction with access_denied', async () => {
    const { gw, sms } = gateway({ consentConfirmation: { codeLifetime: 120 } });
    const opened = await open(gw);
    await allow(gw, opened);
    expect(sms.messages[0]!.context.expiresIn).toBe(120);
    gw.clock.advance(119);
    const wrong = await submit(gw, opened, { decision: 'allow', code: sms.last() === '000000' ? '000001' : '000000' });
    expect(localPath(location(wrong))).toBe(opened.pagePath);
    gw.clock.advance(1);
    const late = await submit(gw, opened, { decision: 'allow', code: sms.last() });
    expect(late.status).toBe(303);
    expect(callback(late)).toMatchObject({
      error: 'access_denied',
      error_description: 'the confirmation code expired',
    });
  });

  it('Deny on the code page needs no code', async () => {
    const { gw } = gateway();
    const opened = await open(gw);
    await allow(gw, opened);
    const res = await submit(gw, opened, { decision: 'deny', code: '' });
    expect(res.status).toBe(303);
    expect(callback(res)).toMatchObject({
      error: 'access_denied',
      error_description: 'the subscriber did not consent',
    });
  });

  it('the hook fails (throws): a clear page, nothing of its error anywhere, and sending again works', async () => {
    const { gw, sms, errors } = gateway();
    const events = recordEvents(gw.netauth);
    const opened = await open(gw);
    sms.state.fail = 'throw';
    const failed = await submit(gw, opened, { decision: 'allow' });
    expect(failed.status).toBe(503);
    expect(failed.headers['content-type']).toMatch(/^text\/html/);
    expect(failed.text).toContain('<h1 id="title">The confirmation code could not be sent</h1>');
    expect(failed.text).toContain('Nothing was shared with Fraud Checker.');
    expect(failed.text).toMatch(/value="allow">Send the code again</);
    expect(failed.text).not.toMatch(/SMS gateway|600000001|at .*\.ts/);
    expect(consentForm(failed.text)).toEqual(opened.form);
    expect(errors).toEqual([]);
    expect(events.of('consent.confirmation_failed').map((e) => e.reason)).toEqual(['send_error']);
    // Nothing was lost: the page still offers Allow, and sending again works.
    const page = await request(gw.app).get(opened.pagePath).set('Cookie', opened.cookie);
    expect(page.text).not.toContain('name="code"');
    sms.state.fail = undefined;
    await allow(gw, opened);
    const done = await submit(gw, opened, { decision: 'allow', code: sms.last() });
    expect(callback(done).code).toBeDefined();
  });

  it('the hook times out: the same page, and its signal is aborted', async () => {
    const { gw, sms } = gateway({ consentConfirmation: { sendTimeout: 50 } });
    const events = recordEvents(gw.netauth);
    const opened = await open(gw);
    sms.state.fail = 'hang';
    const failed = await submit(gw, opened, { decision: 'allow' });
    expect(failed.status).toBe(503);
    expect(failed.text).toContain('The confirmation code could not be sent');
    expect(events.of('consent.confirmation_failed').map((e) => e.reason)).toEqual(['send_timeout']);
    expect(sms.state.aborted).toBe(true);
    sms.state.fail = undefined;
    await allow(gw, opened);
    expect(sms.messages).toHaveLength(1);
  });
});

/** 50 browsers' worth of the same correct code at once: one authorization code at most, on every store. */
async function parallelCorrectCodes(gw: TestGateway, code: () => string, opened: Opened): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: 50 }, () => submit(gw, opened, { decision: 'allow', code: code() })),
  );
  // One submission answers the request (consumes it); every other is refused, or sent back to the page.
  const toApp = answers.filter((res) => res.status === 303 && location(res).href.startsWith(CALLBACK));
  expect(toApp).toHaveLength(1);
  expect(toApp.filter((res) => callback(res).code !== undefined).length).toBeLessThanOrEqual(1);
  for (const res of answers.filter((r) => !toApp.includes(r))) {
    if (res.status === 303) expect(localPath(location(res))).toBe(opened.pagePath);
    else expect(res.status).toBe(403);
  }
}

describe('single use under concurrency', () => {
  it('memory store: 50 parallel submissions of the right code issue at most one authorization code', async () => {
    const { gw, sms } = gateway({ rateLimits: false });
    const opened = await open(gw);
    await allow(gw, opened);
    await parallelCorrectCodes(gw, sms.last, opened);
  });

  const skip = skipRedisTests('the Redis confirmation test');
  describe.skipIf(skip)('Redis', () => {
    const redis = useRedisStore();

    it('Redis store: 50 parallel submissions of the right code issue at most one authorization code', async () => {
      const { gw, sms } = gateway({
        store: redis(),
        rateLimits: false,
        consentPage: { cookieSecret: 'a-shared-secret-123' },
      });
      const opened = await open(gw);
      // Two Allows at once still send one message (the store's add lets one through).
      await Promise.all([allow(gw, opened), allow(gw, opened)]);
      expect(sms.messages).toHaveLength(1);
      await parallelCorrectCodes(gw, sms.last, opened);
    });
  });
});
