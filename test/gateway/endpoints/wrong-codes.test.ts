import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { operatorChannel } from '../../helpers/operator-channel.js';
import { createNetAuth, type NetAuthOptions } from '../../../lib/index.js';
import { CLIENTS, ISSUER, POLICY, SUBSCRIBERS, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  ALICE_IP,
  BOB_IP,
  LOCATION,
  authorize,
  callback,
  consentForm,
  cookies,
  fromDevice,
  localPath,
  location,
  type Device,
} from '../../helpers/frontend.js';
import { recordEvents } from '../../helpers/events.js';
import { skipRedisTests, useRedisStore } from '../../helpers/redis-server.js';

/**
 * Issue 42, finding 5: a long-term cap on the wrong confirmation codes typed for one subscriber
 * (`consentConfirmation.wrongCodesPerSubscriber`, default 10 a day), on both pages and every interaction together,
 * so a script on the handset that starts request after request cannot guess on for a year. Past it the interaction
 * ends as after `maxAttempts` and `rate.limited` says `wrong_codes`.
 */

const CONFIRMED_POLICY = POLICY.map((r) => (r.basis === 'consent' ? { ...r, confirmation: 'required' as const } : r));
const ALICE = { clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION };

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

/** A code that is not `code`. */
const wrongFor = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

/**
 * A consent request from `device` (ALICE's phone by default) with Allow pressed, so a code is out: `type` sends a
 * code on its page, `code` is the one sent.
 */
async function allowed(gw: TestGateway, sms: ReturnType<typeof operatorChannel>, device: Device = {}) {
  const start = await authorize(gw.app, { scope: LOCATION, prompt: 'consent' }, device);
  expect(start.status).toBe(302);
  const cookie = cookies(start);
  const form = consentForm(
    (
      await request(gw.app)
        .get(localPath(location(start)))
        .set('Cookie', cookie)
    ).text,
  );
  const type = (code?: string) =>
    fromDevice(request(gw.app).post('/apigateway/consent'), device)
      .set('Cookie', cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow', ...(code ? { code } : {}) });
  expect((await type()).status).toBe(303);
  const show = () =>
    request(gw.app)
      .get(localPath(location(start)))
      .set('Cookie', cookie);
  return { type, show, code: sms.last() };
}

/** A wrong code with attempts left: 303 back to the consent page, which says so (Post/Redirect/Get). */
function retry(res: request.Response) {
  expect(res.status).toBe(303);
  expect(location(res).href).toContain('/consent?interaction=');
}

/** The interaction ended: access_denied on the redirect_uri, with `description`. */
function ended(res: request.Response, description: string) {
  expect(res.status).toBe(303);
  expect(callback(res)).toMatchObject({ error: 'access_denied', error_description: description });
}

describe('wrong codes per subscriber are capped (consentConfirmation.wrongCodesPerSubscriber)', () => {
  it('10 a day by default, across requests: past it even the right code ends the request; other lines unaffected', async () => {
    const { gw, sms, errors } = gateway();
    const events = recordEvents(gw.netauth);
    // Three requests, three wrong codes each (the third ends each, as maxAttempts says): 9 wrong codes.
    for (let round = 0; round < 3; round++) {
      const { type, code } = await allowed(gw, sms);
      retry(await type(wrongFor(code)));
      retry(await type(wrongFor(code)));
      ended(await type(wrongFor(code)), 'too many wrong confirmation codes');
    }
    const { type, show, code } = await allowed(gw, sms);
    retry(await type(wrongFor(code)));
    expect((await show()).text).toContain('Attempts left: 2.');
    expect(events.of('rate.limited')).toEqual([]);
    // The eleventh code typed, the right one: nothing is compared, the request ends.
    ended(await type(code), 'too many wrong confirmation codes');
    const [limited] = events.of('rate.limited');
    expect(limited).toEqual({
      endpoint: 'consent',
      limit: 'wrong_codes',
      subscriberId: 'sub-alice',
      retryAfter: expect.any(Number),
    });
    expect(limited!.retryAfter).toBeGreaterThan(86_000);
    expect(limited!.retryAfter).toBeLessThanOrEqual(86_400);
    // A new request, the right code: still refused until the window passes.
    const next = await allowed(gw, sms);
    ended(await next.type(next.code), 'too many wrong confirmation codes');
    expect(await gw.netauth.consent.lookup(ALICE)).toEqual([]);
    // Bob's line has its own budget.
    const bob = await allowed(gw, sms, { ip: BOB_IP });
    expect(callback(await bob.type(bob.code)).code).toBeDefined();
    expect(errors).toEqual([]);
  });

  it('a right code does not count; the consents page counts the same budget; it holds with rateLimits: false', async () => {
    const { gw, sms } = gateway({
      rateLimits: false,
      consentConfirmation: { wrongCodesPerSubscriber: { points: 2, duration: 600 } },
    });
    for (let i = 0; i < 3; i++) {
      const { type, code } = await allowed(gw, sms);
      expect(callback(await type(code)).code).toBeDefined();
    }
    // One wrong code on the consents page.
    const offer = await request(gw.app).get('/apigateway/consents').set('X-Forwarded-For', ALICE_IP);
    const cookie = cookies(offer);
    const csrf = /name="csrf" value="([^"]+)"/.exec(offer.text)![1]!;
    const consentsPost = (fields: Record<string, string>) =>
      request(gw.app)
        .post('/apigateway/consents')
        .set('X-Forwarded-For', ALICE_IP)
        .set('Cookie', cookie)
        .type('form')
        .send({ csrf, ...fields });
    expect((await consentsPost({ send: 'code' })).status).toBe(303);
    expect((await consentsPost({ code: wrongFor(sms.last()) })).status).toBe(303);
    // One on the consent page: the budget is spent; the right code is then refused on either page.
    const { type, code } = await allowed(gw, sms);
    retry(await type(wrongFor(code)));
    ended(await type(code), 'too many wrong confirmation codes');
    const capped = await consentsPost({ code: sms.messages.find((m) => m.context.for === 'consents')!.code });
    expect(capped.status).toBe(403);
    expect(capped.text).toContain('This code cannot be used any more');
  });

  it('false turns it off; a bad value is a start-up error naming the option', () => {
    const base = { issuer: ISSUER, clients: CLIENTS, subscribers: SUBSCRIBERS, consentPolicy: POLICY };
    const send = async () => {};
    expect(() =>
      createNetAuth({
        ...base,
        sendConsentConfirmation: send,
        consentConfirmation: { wrongCodesPerSubscriber: false },
      }),
    ).not.toThrow();
    expect(() =>
      createNetAuth({ ...base, consentConfirmation: { wrongCodesPerSubscriber: { points: 0, duration: 900 } } }),
    ).toThrow('consentConfirmation.wrongCodesPerSubscriber.points must be a whole number of codes from 1 to 1000');
    expect(() =>
      createNetAuth({ ...base, consentConfirmation: { wrongCodesPerSubscriber: 'daily' as never } }),
    ).toThrow('consentConfirmation.wrongCodesPerSubscriber must be { points, duration } or false, not a string');
  });

  const skip = skipRedisTests('the Redis wrong-codes test');
  describe.skipIf(skip)('Redis', () => {
    const redis = useRedisStore();

    it('shared by every instance on the store: wrong codes on one gateway spend the budget on another', async () => {
      const options = {
        store: redis(),
        consentConfirmation: { wrongCodesPerSubscriber: { points: 2, duration: 600 } },
      };
      const one = gateway(options);
      const two = gateway(options);
      const first = await allowed(one.gw, one.sms);
      retry(await first.type(wrongFor(first.code)));
      retry(await first.type(wrongFor(first.code)));
      const second = await allowed(two.gw, two.sms);
      ended(await second.type(second.code), 'too many wrong confirmation codes');
    });
  });
});
