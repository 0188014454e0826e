import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { ISSUER, POLICY, createTestGateway } from '../../helpers/gateway.js';
import { operatorChannel } from '../../helpers/operator-channel.js';
import {
  ALICE_IP,
  BOB_IP,
  LOCATION,
  authorize,
  consentForm,
  cookies,
  formTarget,
  fromDevice,
  localPath,
  location,
} from '../../helpers/frontend.js';

/**
 * Issue 44, "subscriber-facing pages that speak plainly": error pages say what happened and what to do (the OAuth
 * code only in a small detail line), and the footer's "withdraw at any time" links to the consents page.
 */

/** The text of an element, tags dropped. */
const textOf = (html: string) => html.replace(/<[^>]+>/g, '');

describe('error pages in plain language', () => {
  it('a stale link: a plain heading and what to do; the code and description only in the detail line', async () => {
    const gw = createTestGateway();
    const res = await request(gw.app).get('/apigateway/consent?interaction=unknown');
    expect(res.status).toBe(400);
    expect(res.text).toContain('<h1>The request could not be completed</h1>');
    expect(res.text).toContain(
      '<p>The link that brought you here is not valid any more, or it was not meant for this page. Return to the application and try again.</p>',
    );
    const detail = /<p class="detail"><small>([\s\S]*?)<\/small><\/p>/.exec(res.text)?.[1];
    expect(detail).toBeDefined();
    expect(textOf(detail!)).toBe(
      'Details for the application developer: invalid_request This consent request is unknown or has expired. Return to the application and try again.',
    );
    // The code appears once, in the detail line; never as "Error: …" or in a heading or the title.
    expect(res.text.split('invalid_request')).toHaveLength(2);
    expect(res.text).not.toContain('Error:');
    expect(res.text).toContain('<title>The request could not be completed</title>');
  });

  it("access_denied (an answer from another line) says so in the operator's name", async () => {
    const gw = createTestGateway({ consentPage: { operatorName: 'Demo Mobile' } });
    const start = await authorize(gw.app, { scope: LOCATION });
    const pagePath = localPath(location(start));
    const cookie = cookies(start);
    const form = consentForm((await request(gw.app).get(pagePath).set('Cookie', cookie)).text);
    const res = await fromDevice(request(gw.app).post(formTarget(pagePath, form.action)), { ip: BOB_IP })
      .set('Cookie', cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
    expect(res.status).toBe(403);
    expect(res.text).toContain(
      '<p>Demo Mobile could not let this request through. Return to the application and try again.</p>',
    );
    expect(res.text).toMatch(/<p class="detail"><small>[^<]*<code>access_denied<\/code>/);
  });
});

describe('the footer links the consents page', () => {
  it('on the consent page, the code page and the answered page: a link that leads to GET {issuer}/consents', async () => {
    const sms = operatorChannel();
    const gw = createTestGateway({
      sendConsentConfirmation: sms.send,
      consentPolicy: POLICY.map((r) => (r.basis === 'consent' ? { ...r, confirmation: 'required' as const } : r)),
    });
    const start = await authorize(gw.app, { scope: LOCATION });
    const pagePath = localPath(location(start));
    const cookie = cookies(start);
    const page = await request(gw.app).get(pagePath).set('Cookie', cookie);
    const footer = /<footer><p>([\s\S]*?)<\/p><\/footer>/.exec(page.text)?.[1];
    expect(footer).toBe(
      'You can withdraw your consent at any time through Your mobile operator. <a href="consents">See and withdraw your consents</a>',
    );
    // The link, resolved as a browser resolves it against the page's URL, is the consents page.
    const target = new URL('consents', new URL(pagePath, ISSUER));
    expect(target.href).toBe(`${ISSUER}/consents`);
    const consents = await request(gw.app).get(localPath(target)).set('X-Forwarded-For', ALICE_IP);
    expect(consents.status).toBe(200);
    expect(consents.text).toContain('A code to see your consents');

    const form = consentForm(page.text);
    const allow = await fromDevice(request(gw.app).post(formTarget(pagePath, form.action)))
      .set('Cookie', cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
    expect(allow.status).toBe(303);
    const codePage = await request(gw.app).get(pagePath).set('Cookie', cookie);
    expect(codePage.text).toContain('name="code"');
    expect(codePage.text).toContain('<a href="consents">See and withdraw your consents</a>');
    const done = await fromDevice(request(gw.app).post(formTarget(pagePath, form.action)))
      .set('Cookie', cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow', code: sms.last() });
    expect(done.status).toBe(303);
    const answered = await request(gw.app).get(pagePath).set('Cookie', cookie);
    expect(answered.text).toContain('You allowed Fraud Checker to use this information.');
    expect(answered.text).toContain('<a href="consents">See and withdraw your consents</a>');
  });

  it('the link text is one of consentPage.texts', async () => {
    const gw = createTestGateway({ consentPage: { texts: { consentsLink: 'My consents' } } });
    const start = await authorize(gw.app, { scope: LOCATION });
    const page = await request(gw.app)
      .get(localPath(location(start)))
      .set('Cookie', cookies(start));
    expect(page.text).toContain('<a href="consents">My consents</a>');
  });
});
