/**
 * Issue 34, done when: with confirmation required, a flow that never reads the operator's channel cannot get an
 * authorization code (a scripted Allow without the code fails), and one that reads the code the hook sent
 * succeeds. A real browser (Debian's chromium) against the demo, whose rules require confirmation and whose
 * `sendConsentConfirmation` puts the code in the phone's text messages.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { resolveConfig } from '../../demo-app/config.js';
import { startDemo, type RunningDemo } from '../../demo-app/start.js';
import { consentFormOf } from '../helpers/browser.js';
import { browserSkip, launchChromium, screenshot } from '../helpers/chromium.js';

const skip = browserSkip('the consent confirmation browser tests');

describe.skipIf(skip)('consent confirmation through the operator channel, in the browser', () => {
  let demo: RunningDemo;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  async function newPage(options: { javaScriptEnabled?: boolean } = {}): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 420, height: 860 }, ...options });
    context.setDefaultTimeout(10_000);
    contexts.push(context);
    return context.newPage();
  }

  /** From the app's home page (Alice's line by default) to the operator's consent page. */
  async function toConsentPage(page: Page): Promise<void> {
    await page.goto(`${demo.appUrl}/`);
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await page.waitForURL(/\/apigateway\/consent\?/);
    await page.getByRole('button', { name: 'Allow' }).waitFor();
  }

  beforeAll(async () => {
    demo = await startDemo(resolveConfig({ ports: { gateway: 0, app: 0 } }, 'test'));
    browser = await launchChromium();
  }, 60_000);

  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close().catch(() => {});
  });

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  it('a script that presses Allow and guesses, never reading the channel, gets no authorization code', async () => {
    const page = await newPage();
    await toConsentPage(page);

    // A background app's HTTP client with the browser's cookies: it reads the form and posts Allow itself.
    const { fields } = consentFormOf(await page.content());
    const consentUrl = new URL('consent', page.url()).href;
    const scripted = await page.context().request.post(consentUrl, {
      form: { ...fields, decision: 'allow' },
      maxRedirects: 0,
    });
    expect(scripted.status()).toBe(303);
    // Back to the operator's page (which now asks for the code), never to the application.
    expect(scripted.headers().location).toMatch(/\/apigateway\/consent\?interaction=/);
    expect(scripted.headers().location?.startsWith(demo.appUrl)).toBe(false);

    // The same in the page itself: Allow leads to the code page, and three guesses end the request.
    await page.reload();
    await page.getByLabel('Confirmation code').waitFor();
    for (const guess of ['000000', '999999']) {
      await page.getByLabel('Confirmation code').fill(guess);
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toMatch(/That code is not right/);
    }
    await page.getByLabel('Confirmation code').fill('123456');
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('heading', { name: 'Consent was not given' }).waitFor();
    expect(page.url().startsWith(`${demo.appUrl}/callback?`)).toBe(true);
    expect(await page.textContent('body')).toContain('access_denied');
  }, 60_000);

  it('a person who reads the code on the phone confirms with the keyboard alone, without JavaScript, and the number is verified', async () => {
    const page = await newPage({ javaScriptEnabled: false });
    await toConsentPage(page);
    await page.getByRole('button', { name: 'Allow' }).click();
    const field = page.getByLabel('Confirmation code');
    await field.waitFor();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'Enter the code Demo Mobile sent to your phone',
    );
    await screenshot(page, 'consent-confirmation');

    // The operator's channel: the phone's text messages (the demo's sendConsentConfirmation).
    const phone = await page.context().newPage();
    await phone.goto(`${demo.gatewayUrl}/demo/phone/34600000001`);
    await phone.getByRole('heading', { name: 'Text messages' }).waitFor();
    await screenshot(phone, 'phone-text-message');
    const message = await phone.getByRole('listitem').filter({ hasText: 'your code is' }).first().textContent();
    // The scope in the message's own words (consentPage.labels), not the page's "the number you typed".
    expect(message).toMatch(
      /^Demo Mobile: your code is [0-9]{6}\. Type it to allow Demo Shop to confirm your phone number\. It expires in 5 min\./,
    );
    const code = /([0-9]{6})/.exec(message!)![1]!;
    await phone.close();

    // Keyboard only: Tab to the labelled field, type, Enter submits Confirm (the form's first button).
    const focused = async () => (await page.locator('#code:focus').count()) === 1;
    for (let i = 0; i < 10 && !(await focused()); i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe(true);
    await page.keyboard.type(code);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${demo.appUrl}/verified`);
    await page.getByRole('heading', { name: 'Number verified' }).waitFor();
  }, 60_000);
});
