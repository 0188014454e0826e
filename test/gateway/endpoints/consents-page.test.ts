import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { memoryLogger } from '../../helpers/memory-logger.js';
import { createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  ALICE_IP,
  BOB_IP,
  CALLBACK,
  LOCATION,
  answerConsent,
  authorize,
  callback,
  cookies,
  formTarget,
  redeem,
} from '../../helpers/frontend.js';

/**
 * The subscriber's consents page (docs/consent.md): the network identifies whose list it is, each consent has a
 * Withdraw form (CSRF-protected, no JavaScript), and withdrawing revokes the consent's tokens at once.
 */

const WIFI_IP = '192.168.1.20';
const PAGE = '/apigateway/consents';

/** Alice allows app-1 device-location on the consent page and redeems the code: the token under that consent. */
async function consentThroughThePage(gw: TestGateway): Promise<string> {
  const start = await authorize(gw.app, { scope: LOCATION });
  const answer = await answerConsent(gw, start, 'allow');
  const code = callback(answer).code!;
  const token = await redeem(gw.app, { code, redirect_uri: CALLBACK });
  expect(token.status).toBe(200);
  return token.body.access_token as string;
}

function open(gw: TestGateway, ip: string, cookie?: string) {
  const req = request(gw.app).get(PAGE).set('X-Forwarded-For', ip);
  if (cookie !== undefined) req.set('Cookie', cookie);
  return req;
}

/** The Withdraw forms of the page, as a browser reads them. */
function forms(html: string): { action: string; fields: Record<string, string> }[] {
  return [...html.matchAll(/<form method="post" action="([^"]*)">([\s\S]*?)<\/form>/g)].map((m) => ({
    action: m[1]!,
    fields: Object.fromEntries(
      [...m[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((f) => [f[1]!, f[2]!]),
    ),
  }));
}

function withdraw(gw: TestGateway, ip: string, cookie: string | undefined, fields: Record<string, string>) {
  const req = request(gw.app).post(formTarget(PAGE, 'consents')).set('X-Forwarded-For', ip).type('form').send(fields);
  if (cookie !== undefined) req.set('Cookie', cookie);
  return req;
}

const callLocation = (gw: TestGateway, token: string) =>
  request(gw.app).get('/location').set('Authorization', `Bearer ${token}`);

describe('GET /consents', () => {
  it("lists the identified subscriber's consents: application, purpose, scope, date, a Withdraw form", async () => {
    const gw = createTestGateway({
      consentPage: {
        operatorName: 'Demo Mobile',
        primaryColor: '#b3123e',
        cookieSecret: 'a-secret-of-16-chars-or-more',
      },
    });
    await consentThroughThePage(gw);
    const res = await open(gw, ALICE_IP);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toMatch(/form-action 'self'; frame-ancestors 'none'/);
    expect(res.text).toContain('<h1>Your consents</h1>');
    expect(res.text).toContain('<h2 id="consent-0">Fraud Checker</h2>');
    expect(res.text).toContain('Why it is asked for: Fraud prevention and detection');
    expect(res.text).toContain('What it gets access to: device-location');
    expect(res.text).toContain(`<time datetime="${new Date(gw.clock.now).toISOString()}">`);
    expect(res.text).toContain('Demo Mobile');
    expect(res.text).toContain('#b3123e');
    const [form] = forms(res.text);
    expect(form!.action).toBe('consents');
    expect(form!.fields).toMatchObject({
      client_id: 'app-1',
      purpose: 'FraudPreventionAndDetection',
      scope: 'device-location',
    });
    expect(form!.fields.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const setCookie = (res.headers['set-cookie'] as unknown as string[]).join('\n');
    expect(setCookie).toMatch(/^netauth\.sid=.*HttpOnly; SameSite=Lax/);
  });

  it("another subscriber's address never sees the list", async () => {
    const gw = createTestGateway();
    await consentThroughThePage(gw);
    const alice = await open(gw, ALICE_IP);
    const bob = await open(gw, BOB_IP, cookies(alice));
    expect(bob.status).toBe(200);
    expect(bob.text).toContain('No application has your consent at the moment.');
    expect(bob.text).not.toContain('Fraud Checker');
    expect(forms(bob.text)).toEqual([]);
  });

  it('an unidentified request (WiFi, no address, sandbox mode) gets a clear page, never a list or a 5xx', async () => {
    const gw = createTestGateway();
    await consentThroughThePage(gw);
    for (const res of [await open(gw, WIFI_IP), await open(gw, '10.99.0.1')]) {
      expect(res.status).toBe(403);
      expect(res.text).toContain('<h1>We could not recognise your line</h1>');
      expect(res.text).not.toContain('Fraud Checker');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    const sandbox = createTestGateway({ sandbox: { allowList: ['+34600000001'] } });
    expect((await open(sandbox, ALICE_IP)).status).toBe(403);
    const withdrawn = await withdraw(gw, WIFI_IP, undefined, {
      csrf: 'x',
      client_id: 'app-1',
      purpose: 'P',
      scope: 's',
    });
    expect(withdrawn.status).toBe(403);
  });

  it('counted with /authorize per device address: over the limit, a 429 page with Retry-After', async () => {
    const gw = createTestGateway({ rateLimits: { authorize: { perAddress: { points: 2, duration: 60 } } } });
    expect((await open(gw, ALICE_IP)).status).toBe(200);
    expect((await authorize(gw.app, {}, { ip: ALICE_IP })).status).toBe(302);
    const limited = await open(gw, ALICE_IP);
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^[0-9]+$/);
    expect((await open(gw, BOB_IP)).status).toBe(200);
  });

  it('texts can be replaced; HEAD answers; other methods 405', async () => {
    const gw = createTestGateway({ consentPage: { texts: { consentsTitle: 'Tus consentimientos' }, language: 'es' } });
    expect((await open(gw, ALICE_IP)).text).toContain('<h1>Tus consentimientos</h1>');
    expect((await request(gw.app).head(PAGE).set('X-Forwarded-For', ALICE_IP)).status).toBe(200);
    const put = await request(gw.app).put(PAGE);
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD, POST');
  });
});

describe('POST /consents (Withdraw)', () => {
  it('withdraws the consent and its token is refused at once; the page says so, once', async () => {
    const { logger, text } = memoryLogger();
    const gw = createTestGateway({ logger });
    const token = await consentThroughThePage(gw);
    expect((await callLocation(gw, token)).status).toBe(200);
    const page = await open(gw, ALICE_IP);
    const cookie = cookies(page);
    const [form] = forms(page.text);

    const res = await withdraw(gw, ALICE_IP, cookie, form!.fields);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('http://gateway.test/apigateway/consents');
    expect((await callLocation(gw, token)).status).toBe(401);
    expect(await gw.netauth.consent.list({ subscriberId: 'sub-alice' })).toEqual([]);

    const after = await open(gw, ALICE_IP, cookie);
    expect(after.text).toContain(
      '<p class="notice" role="status">Fraud Checker no longer has your consent. It cannot use this information any more.</p>',
    );
    expect(after.text).toContain('No application has your consent at the moment.');
    expect((await open(gw, ALICE_IP, cookie)).text).not.toContain('no longer has your consent');

    const log = text();
    expect(log).toContain('"event":"consent.revoked"');
    expect(log).toContain('"via":"page"');
    expect(log).toContain('"reason":"consent_withdrawn"');
    expect(log).not.toContain('34600000001');
    expect(log).not.toContain(token);
  });

  it('refuses a form this session did not serve to this subscriber: nothing is withdrawn', async () => {
    const gw = createTestGateway();
    const token = await consentThroughThePage(gw);
    const page = await open(gw, ALICE_IP);
    const cookie = cookies(page);
    const fields = forms(page.text)[0]!.fields;
    const refusals = [
      // Cross-site: no cookie comes along (SameSite=Lax).
      await withdraw(gw, ALICE_IP, undefined, fields),
      await withdraw(gw, ALICE_IP, cookie, { ...fields, csrf: 'forged' }),
      await withdraw(gw, ALICE_IP, cookie, { client_id: 'app-1', purpose: fields.purpose!, scope: fields.scope! }),
      // Alice's page and cookie, from Bob's line: the form was not served to Bob.
      await withdraw(gw, BOB_IP, cookie, fields),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(403);
      expect(res.text).toContain('This form is not valid any more.');
    }
    expect((await callLocation(gw, token)).status).toBe(200);
    expect((await gw.netauth.consent.list({ subscriberId: 'sub-alice' })).length).toBe(1);
  });

  it('a form without its fields is a 400 page; a consent already gone is no error', async () => {
    const gw = createTestGateway();
    await consentThroughThePage(gw);
    const page = await open(gw, ALICE_IP);
    const cookie = cookies(page);
    const fields = forms(page.text)[0]!.fields;
    const missing = await withdraw(gw, ALICE_IP, cookie, { csrf: fields.csrf! });
    expect(missing.status).toBe(400);
    expect(missing.text).toContain('invalid_request');
    expect((await withdraw(gw, ALICE_IP, cookie, fields)).status).toBe(303);
    expect((await withdraw(gw, ALICE_IP, cookie, fields)).status).toBe(303);
  });
});
