import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { operatorChannel } from '../../helpers/operator-channel.js';
import { memoryLogger } from '../../helpers/memory-logger.js';
import { createNetAuth, type NetAuthOptions } from '../../../lib/index.js';
import { CLIENTS, ISSUER, POLICY, SUBSCRIBERS, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  ALICE_IP,
  BOB_IP,
  CALLBACK,
  CGNAT_IP,
  LOCATION,
  answerConsent,
  authorize,
  callback,
  consentForm,
  cookies,
  formTarget,
  localPath,
  location,
  redeem,
} from '../../helpers/frontend.js';
import { recordEvents } from '../../helpers/events.js';

/**
 * The consents page behind the operator's channel (issue 34's "identified by the network, and by the confirmation
 * when it is on"): with `sendConsentConfirmation` configured, GET /consents offers to send a one-time code (and
 * sends nothing: issue 42, finding 1), the page's own POST sends it, and the list opens only to the session that
 * typed it back, from the same subscriber and address. The codes sent to a subscriber are capped, the consents
 * page's apart from the consent page's.
 */

const PAGE = '/apigateway/consents';
/** Alice's second address in the fixture: the same subscriber, another address. */
const ALICE_IPV6 = '2001:db8::1';

function gateway(options: Partial<NetAuthOptions> = {}) {
  const sms = operatorChannel();
  const errors: unknown[] = [];
  const gw = createTestGateway({ sendConsentConfirmation: sms.send, onError: (e) => errors.push(e), ...options });
  return { gw, sms, errors };
}

/** Alice allows app-1 device-location (a rule without confirmation) and redeems the code: the token. */
async function consentThroughThePage(gw: TestGateway): Promise<string> {
  const start = await authorize(gw.app, { scope: LOCATION });
  const code = callback(await answerConsent(gw, start, 'allow')).code!;
  const token = await redeem(gw.app, { code, redirect_uri: CALLBACK });
  expect(token.status).toBe(200);
  return token.body.access_token as string;
}

function open(gw: TestGateway, ip: string, cookie?: string, port?: string) {
  const req = request(gw.app).get(PAGE).set('X-Forwarded-For', ip);
  if (port !== undefined) req.set('X-Source-Port', port);
  if (cookie !== undefined) req.set('Cookie', cookie);
  return req;
}

function post(gw: TestGateway, ip: string, cookie: string | undefined, fields: Record<string, string>, port?: string) {
  const req = request(gw.app).post(formTarget(PAGE, 'consents')).set('X-Forwarded-For', ip).type('form').send(fields);
  if (port !== undefined) req.set('X-Source-Port', port);
  if (cookie !== undefined) req.set('Cookie', cookie);
  return req;
}

/** The hidden fields of each form of a page, as a browser reads them. */
function forms(html: string): Record<string, string>[] {
  return [...html.matchAll(/<form method="post" action="consents"[^>]*>([\s\S]*?)<\/form>/g)].map((m) =>
    Object.fromEntries(
      [...m[1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((f) => [f[1]!, f[2]!]),
    ),
  );
}

const csrfOf = (html: string) => forms(html)[0]!.csrf!;

/**
 * A browser opens the page (nothing is sent), presses "Send me a code" (its own form's POST), and is sent back to
 * the page, which asks for the code. `sent` is the POST's answer; `page` the code page; `cookie` the session's.
 */
async function askCode(gw: TestGateway, ip: string, cookie?: string, port?: string) {
  const first = await open(gw, ip, cookie, port);
  expect(first.status).toBe(200);
  const jar = cookies(first) || cookie;
  const sent = await post(gw, ip, jar, { csrf: csrfOf(first.text), send: 'code' }, port);
  if (sent.status !== 303) return { sent, page: sent, cookie: jar };
  expect(sent.headers.location).toBe('http://gateway.test/apigateway/consents');
  const page = await open(gw, ip, jar, port);
  expect(page.status).toBe(200);
  return { sent, page, cookie: jar };
}

const callLocation = (gw: TestGateway, token: string) =>
  request(gw.app).get('/location').set('Authorization', `Bearer ${token}`);

/** Alice opens the page, types the code she was sent: the open session's cookie and the list. */
async function confirmed(gw: TestGateway, sms: ReturnType<typeof operatorChannel>) {
  const { page, cookie: codeCookie } = await askCode(gw, ALICE_IP);
  const res = await post(gw, ALICE_IP, codeCookie, { csrf: csrfOf(page.text), code: sms.last() });
  expect(res.status).toBe(303);
  expect(res.headers.location).toBe('http://gateway.test/apigateway/consents');
  const cookie = cookies(res);
  const list = await open(gw, ALICE_IP, cookie);
  expect(list.status).toBe(200);
  return { cookie, codeCookie, list };
}

describe('GET /consents with sendConsentConfirmation configured', () => {
  it("GET sends nothing: it offers the code; the page's own POST sends it; a reload sends no second one", async () => {
    const { gw, sms } = gateway();
    await consentThroughThePage(gw);
    const offer = await open(gw, ALICE_IP);
    expect(offer.status).toBe(200);
    expect(offer.headers['cache-control']).toBe('no-store');
    expect(offer.headers['x-frame-options']).toBe('DENY');
    expect(offer.text).toContain('<h1 id="title">A code to see your consents</h1>');
    expect(offer.text).toMatch(/<input type="hidden" name="send" value="code">[\s\S]*>Send me a code</);
    expect(offer.text).not.toContain('name="code"');
    expect(offer.text).not.toContain('Fraud Checker');
    expect(sms.messages).toHaveLength(0);
    const setCookie = (offer.headers['set-cookie'] as unknown as string[]).join('\n');
    expect(setCookie).toMatch(/^netauth\.sid=[^;]+; Path=\/apigateway; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
    // Reloads and HEAD (a prefetch, a link checker) send nothing either.
    expect((await open(gw, ALICE_IP, cookies(offer))).text).toContain('Send me a code');
    expect((await request(gw.app).head(PAGE).set('X-Forwarded-For', ALICE_IP)).status).toBe(200);
    expect(sms.messages).toHaveLength(0);

    const { page, cookie } = await askCode(gw, ALICE_IP, cookies(offer));
    expect(page.text).toContain('<h1 id="title">Enter the code Your mobile operator sent to your phone</h1>');
    expect(page.text).toContain('Type it here to see your consents.');
    expect(page.text).toMatch(/<input id="code" class="code" name="code" [^>]*autocomplete="one-time-code"/);
    expect(page.text).not.toContain('Fraud Checker');
    expect(page.text).not.toContain('client_id');
    expect(page.text).not.toMatch(/<script/i);

    expect(sms.messages).toHaveLength(1);
    const [message] = sms.messages;
    expect(message!.subscriber).toEqual({ id: 'sub-alice', phoneNumber: '+34600000001' });
    expect(message!.code).toMatch(/^[0-9]{6}$/);
    const { signal, ...context } = message!.context;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(context).toEqual({
      for: 'consents',
      kind: 'code',
      expiresIn: 300,
      language: 'en',
      message:
        'Your mobile operator: your code is {code}. Type it to see your consents. It expires in 5 min. Never share it.',
    });
    expect(page.text).not.toContain(message!.code);
    expect(page.text).not.toContain('600000001');

    const again = await open(gw, ALICE_IP, cookie);
    expect(again.status).toBe(200);
    expect(again.text).toContain('name="code"');
    // The send form posted twice (a double click): one message.
    const twice = await post(gw, ALICE_IP, cookie, { csrf: csrfOf(again.text), send: 'code' });
    expect(twice.status).toBe(303);
    expect(sms.messages).toHaveLength(1);
  });

  it('the right code opens the list to a new session id; the code is single use', async () => {
    const { gw, sms } = gateway();
    await consentThroughThePage(gw);
    const { cookie, codeCookie, list } = await confirmed(gw, sms);
    expect(cookie).not.toBe(codeCookie);
    expect(list.text).toContain('<h2 id="consent-0">Fraud Checker</h2>');
    expect(forms(list.text)[0]).toMatchObject({ client_id: 'app-1', scope: 'device-location' });
    // A reload of the open list sends nothing.
    expect((await open(gw, ALICE_IP, cookie)).text).toContain('Fraud Checker');
    expect(sms.messages).toHaveLength(1);

    // The same code again: the session it was typed in is gone, the open one has no code out.
    const code = sms.last();
    expect((await post(gw, ALICE_IP, codeCookie, { csrf: 'x', code })).status).toBe(403);
    const reused = await post(gw, ALICE_IP, cookie, { csrf: csrfOf(list.text), code });
    expect(reused.status).toBe(303);
    // The old cookie opens nothing: a new code is offered, and nothing sent.
    const old = await open(gw, ALICE_IP, codeCookie);
    expect(old.text).not.toContain('Fraud Checker');
    expect(old.text).toContain('Send me a code');
    expect(sms.messages).toHaveLength(1);
  });

  it('withdraw needs the open session and its CSRF token; then the token is refused at once', async () => {
    const { gw, sms } = gateway();
    const token = await consentThroughThePage(gw);
    const { page, cookie: codeCookie } = await askCode(gw, ALICE_IP);
    const fields = { client_id: 'app-1', purpose: 'FraudPreventionAndDetection', scope: 'device-location' };
    // A background app that loaded the code page has a session and a token, but no code: refused.
    const early = await post(gw, ALICE_IP, codeCookie, { ...fields, csrf: csrfOf(page.text) });
    expect(early.status).toBe(403);
    expect(early.text).toContain('This page is not open any more.');
    expect((await callLocation(gw, token)).status).toBe(200);

    const { cookie, list } = await confirmed(gw, sms);
    const form = forms(list.text)[0]!;
    for (const res of [
      await post(gw, ALICE_IP, cookie, { ...fields }),
      await post(gw, ALICE_IP, cookie, { ...form, csrf: 'forged' }),
      await post(gw, ALICE_IP, undefined, form),
    ]) {
      expect(res.status).toBe(403);
      expect(res.text).toContain('This form is not valid any more.');
    }
    expect((await callLocation(gw, token)).status).toBe(200);

    const done = await post(gw, ALICE_IP, cookie, form);
    expect(done.status).toBe(303);
    expect((await callLocation(gw, token)).status).toBe(401);
    const after = await open(gw, ALICE_IP, cookie);
    expect(after.text).toContain('Fraud Checker no longer has your consent.');
  });

  it('the open session is not usable from another address, another subscriber, or after its time', async () => {
    const { gw, sms } = gateway();
    const token = await consentThroughThePage(gw);
    const { cookie, list } = await confirmed(gw, sms);
    const form = forms(list.text)[0]!;

    // Alice's own line at another address: the code is asked again (and sent to Alice).
    const moved = await askCode(gw, ALICE_IPV6, cookie);
    expect(moved.page.text).not.toContain('Fraud Checker');
    expect(moved.page.text).toContain('name="code"');
    expect(sms.messages.map((m) => m.subscriber.id)).toEqual(['sub-alice', 'sub-alice']);
    expect((await post(gw, ALICE_IPV6, cookie, form)).status).toBe(403);

    // Bob's line with Alice's cookie: Bob's code, never Alice's list.
    const bob = await askCode(gw, BOB_IP, cookie);
    expect(bob.page.text).not.toContain('Fraud Checker');
    expect(sms.messages.at(-1)!.subscriber.id).toBe('sub-bob');
    expect((await post(gw, BOB_IP, cookie, form)).status).toBe(403);
    expect((await callLocation(gw, token)).status).toBe(200);

    // Behind CGNAT: one address, the port tells the lines apart.
    const { gw: nat, sms: natSms } = gateway();
    const alice = await askCode(nat, CGNAT_IP, undefined, '1500');
    const opened = await post(nat, CGNAT_IP, alice.cookie, { csrf: csrfOf(alice.page.text), code: natSms.last() })
      .set('X-Source-Port', '1501')
      .then((res) => cookies(res));
    expect((await open(nat, CGNAT_IP, opened, '1600')).text).toContain('Your consents');
    const other = await askCode(nat, CGNAT_IP, opened, '3000');
    expect(other.page.text).not.toContain('Your consents');
    expect(natSms.messages.at(-1)!.subscriber.id).toBe('sub-bob');
  });

  it('the open session lasts lifetimes.interaction (the injected clock); then the code is asked again', async () => {
    const { gw, sms } = gateway({ lifetimes: { interaction: 300 } });
    await consentThroughThePage(gw);
    const { cookie, list } = await confirmed(gw, sms);
    gw.clock.advance(299);
    expect((await open(gw, ALICE_IP, cookie)).text).toContain('Fraud Checker');
    gw.clock.advance(2);
    const later = await open(gw, ALICE_IP, cookie);
    expect(later.text).not.toContain('Fraud Checker');
    expect(later.text).toContain('Send me a code');
    expect((await post(gw, ALICE_IP, cookie, forms(list.text)[0]!)).status).toBe(403);
  });

  it('a wrong code: the page again with the attempts left; the last wrong one ends it, and a new code starts again', async () => {
    const { gw, sms } = gateway();
    await consentThroughThePage(gw);
    const events = recordEvents(gw.netauth);
    const { page, cookie } = await askCode(gw, ALICE_IP);
    const csrf = csrfOf(page.text);
    const wrong = (n: number) => String((Number(sms.last()) + n) % 1_000_000).padStart(6, '0');

    // Post/Redirect/Get: each refused code answers 303 to the page, which says why once.
    const malformed = await post(gw, ALICE_IP, cookie, { csrf, code: '12ab' });
    expect(malformed.status).toBe(303);
    expect(localPath(location(malformed))).toBe(PAGE);
    expect((await open(gw, ALICE_IP, cookie)).text).toContain('Type the 6 digits of the code.');
    const first = await post(gw, ALICE_IP, cookie, { csrf, code: wrong(1) });
    expect(first.status).toBe(303);
    const shown = await open(gw, ALICE_IP, cookie);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('That code is not right. Attempts left: 2.');
    expect(shown.text).toContain('aria-invalid="true"');
    expect(shown.text).not.toContain('Fraud Checker');
    const reloaded = await open(gw, ALICE_IP, cookie);
    expect(reloaded.text).toContain('name="code"');
    expect(reloaded.text).not.toContain('role="alert"');
    expect((await post(gw, ALICE_IP, cookie, { csrf, code: wrong(2) })).status).toBe(303);
    const last = await post(gw, ALICE_IP, cookie, { csrf, code: wrong(3) });
    expect(last.status).toBe(403);
    expect(last.text).toContain('<h1 id="title">This code cannot be used any more</h1>');
    // The events the consent page's codes emit, told apart by `for`: no application here, only whose line.
    expect(events.of('consent.confirmation_failed')).toEqual([
      { for: 'consents', subscriberId: 'sub-alice', reason: 'wrong_code' },
      { for: 'consents', subscriberId: 'sub-alice', reason: 'wrong_code' },
      { for: 'consents', subscriberId: 'sub-alice', reason: 'attempts_exhausted' },
    ]);
    expect(last.text).toMatch(
      /<form method="post" action="consents"[\s\S]*name="send" value="code"[\s\S]*>Send a new code</,
    );

    // The right code after: refused (the old form's token is spent), nothing opens.
    const late = await post(gw, ALICE_IP, cookie, { csrf, code: sms.messages[0]!.code });
    expect(late.status).toBe(403);
    expect((await open(gw, ALICE_IP, cookie)).text).not.toContain('Fraud Checker');
    expect(sms.messages).toHaveLength(1);
    // "Send a new code": a new code, and the page asks for it.
    const resend = await post(gw, ALICE_IP, cookie, { csrf: csrfOf(last.text), send: 'code' });
    expect(resend.status).toBe(303);
    expect(sms.messages).toHaveLength(2);
    expect((await open(gw, ALICE_IP, cookie)).text).toContain('name="code"');
  });

  it('an expired code ends it (the injected clock)', async () => {
    const { gw, sms } = gateway({ consentConfirmation: { codeLifetime: 60 } });
    const { page, cookie } = await askCode(gw, ALICE_IP);
    gw.clock.advance(61);
    const res = await post(gw, ALICE_IP, cookie, { csrf: csrfOf(page.text), code: sms.last() });
    expect(res.status).toBe(403);
    expect(res.text).toContain('This code cannot be used any more');
  });

  it('bad input is a page, never a 5xx: no session, a repeated field, an unidentified line', async () => {
    const { gw, sms } = gateway();
    const { page, cookie } = await askCode(gw, ALICE_IP);
    expect((await post(gw, ALICE_IP, undefined, { csrf: csrfOf(page.text), code: sms.last() })).status).toBe(403);
    const repeated = await request(gw.app)
      .post(PAGE)
      .set('X-Forwarded-For', ALICE_IP)
      .set('Cookie', cookie!)
      .type('form')
      .send(`csrf=${csrfOf(page.text)}&code=1&code=2`);
    expect(repeated.status).toBe(400);
    const wifi = await open(gw, '192.168.1.20');
    expect(wifi.status).toBe(403);
    expect(wifi.text).toContain('We could not recognise your line');
    expect(sms.messages).toHaveLength(1);
  });

  it('the hook fails or times out: a clear 503 page with a way to a new code; nothing of its error anywhere', async () => {
    const { logger, text } = memoryLogger();
    const { gw, sms, errors } = gateway({ logger, consentConfirmation: { sendTimeout: 50 } });
    const events = recordEvents(gw.netauth);
    sms.state.fail = 'throw';
    const failed = (await askCode(gw, ALICE_IP)).sent;
    expect(failed.status).toBe(503);
    expect(failed.text).toContain('<h1 id="title">The confirmation code could not be sent</h1>');
    expect(failed.text).toMatch(
      /<form method="post" action="consents"[\s\S]*name="send" value="code"[\s\S]*>Send a new code</,
    );
    expect(failed.text).not.toMatch(/SMS gateway|600000001/);
    sms.state.fail = 'hang';
    expect((await askCode(gw, ALICE_IP)).sent.status).toBe(503);
    expect(events.of('consent.confirmation_failed')).toEqual([
      { for: 'consents', subscriberId: 'sub-alice', reason: 'send_error' },
      { for: 'consents', subscriberId: 'sub-alice', reason: 'send_timeout' },
    ]);

    sms.state.fail = undefined;
    const { page, cookie } = await askCode(gw, ALICE_IP);
    expect(page.status).toBe(200);
    const opened = await post(gw, ALICE_IP, cookie, { csrf: csrfOf(page.text), code: sms.last() });
    expect(opened.status).toBe(303);
    expect(errors).toEqual([]);
    const log = text();
    // The line's number as a number, not digits inside a log line's float (a durationMs once held 600000001).
    expect(log).not.toMatch(/SMS gateway|(?<![\d.])\+?34600000001/);
    expect(log).not.toContain(sms.last());
    expect(log).not.toContain(csrfOf(page.text));
  });

  it("the hook is what turns it on: with every rule's confirmation 'off' the page still asks for the code", async () => {
    const { gw, sms } = gateway({ consentPolicy: POLICY.map((r) => ({ ...r, confirmation: 'off' as const })) });
    const { page } = await askCode(gw, ALICE_IP);
    expect(page.text).toContain('name="code"');
    expect(sms.messages).toHaveLength(1);
  });

  it('without the hook the page is as before: the network alone identifies the subscriber', async () => {
    const gw = createTestGateway();
    await consentThroughThePage(gw);
    const page = await open(gw, ALICE_IP);
    expect(page.text).toContain('Fraud Checker');
    expect(page.text).not.toContain('name="code"');
  });
});

describe('codes sent to a subscriber are capped (consentConfirmation.codesPerSubscriber)', () => {
  it('5 per 900 s by default: the next one is a 429 page with Retry-After, nothing sent; other lines unaffected', async () => {
    const { gw, sms } = gateway();
    const events = recordEvents(gw.netauth);
    // Each visit without the cookie is a new browser (or a background app): a new code when it asks.
    for (let i = 0; i < 5; i++) expect((await askCode(gw, ALICE_IP)).sent.status).toBe(303);
    expect(sms.messages).toHaveLength(5);
    const capped = (await askCode(gw, ALICE_IP)).sent;
    expect(capped.status).toBe(429);
    expect(capped.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    expect(Number(capped.headers['retry-after'])).toBeLessThanOrEqual(900);
    expect(capped.text).toContain('<h1>Too many codes were sent to your phone</h1>');
    expect(capped.text).toMatch(/Wait [0-9]+ min, then try again\./);
    expect(capped.text).not.toContain('name="code"');
    expect(sms.messages).toHaveLength(5);
    expect(events.of('rate.limited')).toEqual([
      {
        endpoint: 'consents',
        limit: 'confirmation_codes',
        subscriberId: 'sub-alice',
        retryAfter: Number(capped.headers['retry-after']),
      },
    ]);
    expect((await askCode(gw, BOB_IP)).sent.status).toBe(303);
    expect(sms.messages).toHaveLength(6);
  });

  it('holds with rateLimits: false: it protects the line, not the gateway', async () => {
    const { gw, sms } = gateway({
      rateLimits: false,
      consentConfirmation: { codesPerSubscriber: { points: 2, duration: 600 } },
    });
    for (let i = 0; i < 2; i++) expect((await askCode(gw, ALICE_IP)).sent.status).toBe(303);
    expect((await askCode(gw, ALICE_IP)).sent.status).toBe(429);
    expect(sms.messages).toHaveLength(2);
  });

  it("the consents page's codes never spend the consent page's: Allow still sends its code; past its own cap a 429 page, the request pending", async () => {
    const { gw, sms } = gateway({
      consentPolicy: POLICY.map((r) => (r.basis === 'consent' ? { ...r, confirmation: 'required' as const } : r)),
      consentConfirmation: { codesPerSubscriber: { points: 2, duration: 600 } },
    });
    const allowOnce = async () => {
      const start = await authorize(gw.app, { scope: LOCATION });
      const cookie = cookies(start);
      const pagePath = localPath(location(start));
      const form = consentForm((await request(gw.app).get(pagePath).set('Cookie', cookie)).text);
      const allow = await request(gw.app)
        .post('/apigateway/consent')
        .set('X-Forwarded-For', ALICE_IP)
        .set('Cookie', cookie)
        .type('form')
        .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
      return { allow, cookie, pagePath };
    };
    // The consents page's budget spent (a background app on the handset, say).
    for (let i = 0; i < 2; i++) expect((await askCode(gw, ALICE_IP)).sent.status).toBe(303);
    expect((await askCode(gw, ALICE_IP)).sent.status).toBe(429);
    expect(sms.messages.map((m) => m.context.for)).toEqual(['consents', 'consents']);
    // Alice's own Allow: sent.
    for (let i = 0; i < 2; i++) expect((await allowOnce()).allow.status).toBe(303);
    expect(sms.messages.map((m) => m.context.for)).toEqual(['consents', 'consents', 'consent', 'consent']);
    // The consent page's own budget spent: a 429 page, nothing sent.
    const { allow, cookie, pagePath } = await allowOnce();
    expect(allow.status).toBe(429);
    expect(allow.headers['retry-after']).toMatch(/^[0-9]+$/);
    expect(allow.text).toContain('Too many codes were sent to your phone');
    expect(sms.messages).toHaveLength(4);
    // Still pending: the page offers Allow again (no code is out).
    const again = await request(gw.app).get(pagePath).set('Cookie', cookie);
    expect(again.status).toBe(200);
    expect(again.text).toMatch(/value="allow">Allow</);
  });

  it('false turns it off; a bad value is a start-up error naming the option', () => {
    const base = { issuer: ISSUER, clients: CLIENTS, subscribers: SUBSCRIBERS, consentPolicy: POLICY };
    const send = async () => {};
    expect(() =>
      createNetAuth({ ...base, sendConsentConfirmation: send, consentConfirmation: { codesPerSubscriber: false } }),
    ).not.toThrow();
    expect(() =>
      createNetAuth({ ...base, consentConfirmation: { codesPerSubscriber: { points: 0, duration: 900 } } }),
    ).toThrow('consentConfirmation.codesPerSubscriber.points must be a whole number of codes from 1 to 1000');
    expect(() =>
      createNetAuth({ ...base, consentConfirmation: { codesPerSubscriber: { points: 5 } as never } }),
    ).toThrow('consentConfirmation.codesPerSubscriber.duration is required');
    expect(() => createNetAuth({ ...base, consentConfirmation: { codesPerSubscriber: 5 as never } })).toThrow(
      'consentConfirmation.codesPerSubscriber must be { points, duration } or false, not a number',
    );
    expect(() =>
      createNetAuth({
        ...base,
        consentConfirmation: { codesPerSubscriber: { points: 5, duration: 9, per: 1 } as never },
      }),
    ).toThrow('consentConfirmation.codesPerSubscriber.per');
  });

  it('codesPerSubscriber: false: no cap', async () => {
    const { gw, sms } = gateway({ consentConfirmation: { codesPerSubscriber: false } });
    for (let i = 0; i < 7; i++) expect((await askCode(gw, ALICE_IP)).sent.status).toBe(303);
    expect(sms.messages).toHaveLength(7);
  });
});

describe('only the page itself makes the operator send a code (issue 42, finding 1)', () => {
  const confirmedPolicy = POLICY.map((r) => (r.basis === 'consent' ? { ...r, confirmation: 'required' as const } : r));

  it("another site's images of /consents send nothing, and Alice's own Allow still sends her code", async () => {
    const { gw, sms } = gateway({ consentPolicy: confirmedPolicy });
    // What an <img> of another site sends: no cookie (SameSite=Lax), Sec-Fetch-Site: cross-site.
    for (let i = 0; i < 6; i++) {
      const img = await open(gw, ALICE_IP).set('Sec-Fetch-Site', 'cross-site').set('Sec-Fetch-Dest', 'image');
      expect(img.status).toBe(200);
    }
    expect(sms.messages).toHaveLength(0);
    const start = await authorize(gw.app, { scope: LOCATION });
    const cookie = cookies(start);
    const form = consentForm(
      (
        await request(gw.app)
          .get(localPath(location(start)))
          .set('Cookie', cookie)
      ).text,
    );
    const allow = await request(gw.app)
      .post('/apigateway/consent')
      .set('X-Forwarded-For', ALICE_IP)
      .set('Cookie', cookie)
      .set('Sec-Fetch-Site', 'same-origin')
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
    expect(allow.status).toBe(303);
    expect(sms.messages.map((m) => m.context.for)).toEqual(['consent']);
  });

  it('a POST from another site is refused with a 403 page before anything is sent, counted or withdrawn', async () => {
    const { gw, sms } = gateway({ consentPolicy: confirmedPolicy });
    const offer = await open(gw, ALICE_IP);
    const cookie = cookies(offer);
    const send = { csrf: csrfOf(offer.text), send: 'code' };
    for (const headers of [
      { 'Sec-Fetch-Site': 'cross-site' },
      { 'Sec-Fetch-Site': 'same-site' },
      { 'Sec-Fetch-Site': 'cross-site', Origin: 'http://gateway.test' },
      { Origin: 'http://attacker.test' },
      { Origin: 'null' },
      { Origin: 'https://gateway.test' },
    ]) {
      const res = await post(gw, ALICE_IP, cookie, send).set(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.text).toContain('This form was sent from another site, so it is refused.');
      expect(res.text).not.toMatch(/<script/i);
    }
    expect(sms.messages).toHaveLength(0);

    // The consent page's Allow, from another site: refused, no code; the request still pending.
    const start = await authorize(gw.app, { scope: LOCATION });
    const consentCookie = cookies(start);
    const pagePath = localPath(location(start));
    const form = consentForm((await request(gw.app).get(pagePath).set('Cookie', consentCookie)).text);
    const fields = { interaction: form.interaction, csrf: form.csrf, decision: 'allow' };
    const consentPost = () =>
      request(gw.app)
        .post('/apigateway/consent')
        .set('X-Forwarded-For', ALICE_IP)
        .set('Cookie', consentCookie)
        .type('form')
        .send(fields);
    for (const headers of [{ 'Sec-Fetch-Site': 'cross-site' }, { Origin: 'http://attacker.test' }]) {
      const res = await consentPost().set(headers);
      expect(res.status).toBe(403);
      expect(res.text).toContain('This form was sent from another site');
    }
    expect(
      (
        await consentPost()
          .set({ 'Sec-Fetch-Site': 'cross-site' })
          .send({ ...fields, decision: 'deny' })
      ).status,
    ).toBe(403);
    expect(sms.messages).toHaveLength(0);

    // The page itself: Sec-Fetch-Site same-origin or none, the issuer's Origin, or neither header (no browser).
    for (const headers of [
      { 'Sec-Fetch-Site': 'same-origin' },
      { 'Sec-Fetch-Site': 'none' },
      { Origin: 'http://gateway.test' },
      {},
    ]) {
      const res = await post(gw, ALICE_IP, cookie, send).set(headers);
      expect(res.status, JSON.stringify(headers)).toBe(303);
    }
    expect(sms.messages.map((m) => m.context.for)).toEqual(['consents']);
    expect((await consentPost().set({ Origin: 'http://gateway.test' })).status).toBe(303);
    expect(sms.messages.map((m) => m.context.for)).toEqual(['consents', 'consent']);
  });

  it('Withdraw from another site is refused: the token keeps working', async () => {
    const { gw, sms } = gateway();
    const token = await consentThroughThePage(gw);
    const { cookie, list } = await confirmed(gw, sms);
    const form = forms(list.text)[0]!;
    expect((await post(gw, ALICE_IP, cookie, form).set('Sec-Fetch-Site', 'cross-site')).status).toBe(403);
    expect((await callLocation(gw, token)).status).toBe(200);
    expect((await post(gw, ALICE_IP, cookie, form).set('Sec-Fetch-Site', 'same-origin')).status).toBe(303);
    expect((await callLocation(gw, token)).status).toBe(401);
  });
});
