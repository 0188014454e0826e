/**
 * The demo end to end in a real browser (Debian's chromium through playwright-core): both flows, consent
 * allowed and denied, the WiFi failure, out-of-band consent on the subscriber's phone. The demo runs in this
 * process on free ports, as `npm run demo` would run it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { resolveConfig } from '../../demo-app/config.js';
import { startDemo, type RunningDemo } from '../../demo-app/start.js';
import { browserSkip, launchChromium, screenshot } from '../helpers/chromium.js';

const skip = browserSkip('the demo browser tests');

describe.skipIf(skip)('demo in the browser', () => {
  let demo: RunningDemo;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  /** A fresh browser profile per test: its own cookies, so its own simulated device and sessions. */
  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    context.setDefaultTimeout(10_000);
    contexts.push(context);
    return context.newPage();
  }

  async function chooseDevice(page: Page, label: RegExp): Promise<void> {
    await page.getByRole('link', { name: 'Change the simulated device' }).click();
    await page.getByRole('radio', { name: label }).check();
    await page.getByRole('button', { name: 'Use this device' }).click();
    await page.waitForURL(`${demo.appUrl}/`);
  }

  /**
   * Allow on the consent page, then what the demo's rules require: the code the operator texted, read on the
   * phone's inbox (another tab) and typed on the page. The tests that do it get 60 s: more steps than the
   * default timeout allows a loaded machine.
   */
  async function allowWithCode(page: Page, line: string): Promise<void> {
    await page.getByRole('button', { name: 'Allow' }).click();
    await typeCode(page, line);
  }

  /** The code page is showing: the newest code in the phone's inbox (another tab), typed and confirmed. */
  async function typeCode(page: Page, line: string): Promise<void> {
    await page.getByLabel('Confirmation code').waitFor();
    const phone = await page.context().newPage();
    await phone.goto(`${demo.gatewayUrl}/demo/phone/${line}`);
    const code = await phone.locator('.sms-code').first().textContent();
    await phone.close();
    await page.getByLabel('Confirmation code').fill(code!);
    await page.getByRole('button', { name: 'Confirm' }).click();
  }

  beforeAll(async () => {
    // A poll interval of 1 s keeps the backend flow quick; everything else is the embedded defaults.
    demo = await startDemo(resolveConfig({ ports: { gateway: 0, app: 0 }, lifetimes: { pollInterval: 1 } }, 'test'));
    browser = await launchChromium();
  });

  // Each test's profile closes with it: its renderer processes go, so the browser holds one test's pages at most.
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close().catch(() => {});
  });

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  it('frontend flow, consent allowed: the consent page, then the number verified', async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    await page.getByText('On the mobile network').waitFor();
    await page.getByRole('button', { name: 'Verify my number' }).click();

    // The operator's consent page, on the gateway.
    await page.waitForURL(/\/apigateway\/consent\?/);
    expect(page.url().startsWith(demo.gatewayUrl)).toBe(true);
    await page.getByRole('heading', { level: 1 }).waitFor();
    expect(await page.textContent('body')).toContain('Demo Shop');
    await screenshot(page, 'frontend-consent-page');
    await allowWithCode(page, '34600000001');

    await page.waitForURL(`${demo.appUrl}/verified`);
    await page.getByRole('heading', { name: 'Number verified' }).waitFor();
    const status = await page.getByRole('status').textContent();
    expect(status).toContain('+34 600 000 001');
    // The token is shown masked: 4 characters, an ellipsis, 4 characters.
    expect(await page.locator('dt:text-is("Access token") + dd').textContent()).toMatch(/^.{4}….{4}$/);
    expect(await page.locator('dt:text-is("API") + dd').textContent()).toContain('{"devicePhoneNumberVerified":true}');
    await screenshot(page, 'frontend-verified');

    // Consent is on record now: another number goes straight to the answer, which is "no".
    await page.goto(`${demo.appUrl}/`);
    await page.getByLabel('Your phone number').fill('+34 600 000 002');
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await page.getByRole('heading', { name: 'Number not verified' }).waitFor();
    expect(page.url()).toBe(`${demo.appUrl}/verified`);
  }, 60_000);

  it('frontend flow: the consent page describes the scope in plain words; Back after Allow leads back to the app', async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    // Carmen: a line no other test gives consent for, so the consent page is shown.
    await chooseDevice(page, /Carmen's phone/);
    await page.getByText("Carmen's phone").first().waitFor();
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await page.waitForURL(/\/apigateway\/consent\?/);
    const access = await page.getByRole('list').textContent();
    expect(access?.trim()).toBe('confirm that the phone number you typed is the number of this phone');
    await allowWithCode(page, '34600000003');
    await page.waitForURL(`${demo.appUrl}/verified`);

    await page.goBack();
    await page.getByRole('heading', { name: 'You allowed Demo Shop to use this information.' }).waitFor();
    expect(page.url()).toMatch(/\/apigateway\/consent\?/);
    await page.getByRole('link', { name: 'Return to Demo Shop' }).click();
    await page.waitForURL(`${demo.appUrl}/`);
    await page.getByRole('button', { name: 'Verify my number' }).waitFor();
  }, 60_000);

  it('frontend flow, consent denied: a friendly "consent was not given" page', async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    await chooseDevice(page, /Bob's phone/);
    await page.getByText("Bob's phone").first().waitFor();
    // The form offers the chosen line's number.
    expect(await page.getByLabel('Your phone number').inputValue()).toBe('+34600000002');
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await page.waitForURL(/\/apigateway\/consent\?/);
    await page.getByRole('button', { name: 'Deny' }).click();

    await page.getByRole('heading', { name: 'Consent was not given' }).waitFor();
    expect(page.url().startsWith(`${demo.appUrl}/callback?`)).toBe(true);
    expect(await page.textContent('body')).toContain('access_denied');
    await screenshot(page, 'frontend-denied');
  });

  it("the subscriber's consents page: listed, withdrawn, the app's token refused at once; no other line sees it", async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    await page.getByRole('button', { name: 'Verify my number' }).click();
    // Alice may have allowed it in an earlier test: the consent page shows only when she has not.
    await page.waitForURL((url) => url.pathname === '/verified' || url.pathname.endsWith('/consent'));
    if (page.url().includes('/apigateway/consent')) await allowWithCode(page, '34600000001');
    await page.getByRole('heading', { name: 'Number verified' }).waitFor();

    // From Alice's phone, the operator's consents page: the network recognises the line, and the operator
    // texts a code to the phone first (the demo's hook), so an app in the background cannot open the list.
    await page.goto(`${demo.gatewayUrl}/demo/phone/34600000001`);
    await page.getByRole('button', { name: 'Open my consents page' }).click();
    await page.waitForURL(`${demo.gatewayUrl}/apigateway/consents`);
    // Opening the page sends nothing (another site could open it): its own button asks for the code.
    await page.getByRole('button', { name: 'Send me a code' }).click();
    await page.getByRole('heading', { name: 'Enter the code Demo Mobile sent to your phone' }).waitFor();
    expect(await page.textContent('main')).not.toContain('Demo Shop');
    await screenshot(page, 'consents-code');
    await typeCode(page, '34600000001');
    await page.getByRole('heading', { name: 'Your consents', level: 1 }).waitFor();
    // The scope in the list's words (the demo's consentPage.labels), not the request's "the number you typed".
    const what = 'Confirm that a number you give is this line';
    const consent = page.getByRole('listitem').filter({ hasText: what });
    await expect(consent.getByRole('heading', { name: 'Demo Shop' }).count()).resolves.toBe(1);
    expect(await consent.textContent()).toContain('To provide the service you asked for');
    await screenshot(page, 'consents-list');

    await consent.getByRole('button', { name: /^Withdraw/ }).click();
    await page.getByRole('status').filter({ hasText: 'Demo Shop no longer has your consent' }).waitFor();
    expect(await page.textContent('main')).not.toContain(what);
    await screenshot(page, 'consents-withdrawn');

    // The app calls the API again with the token it holds: refused at once.
    await page.goto(`${demo.appUrl}/verified`);
    await page.getByRole('heading', { name: 'The operator refused the token' }).waitFor();
    expect(await page.textContent('body')).toContain('HTTP 401');

    // Alice allows it again; Bob's line opens the page and never sees her consent.
    await page.goto(`${demo.appUrl}/`);
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await allowWithCode(page, '34600000001');
    await page.getByRole('heading', { name: 'Number verified' }).waitFor();
    await page.goto(`${demo.appUrl}/`);
    await chooseDevice(page, /Bob's phone/);
    await page.goto(`${demo.gatewayUrl}/apigateway/consents`);
    // Alice's open page does not open from Bob's line: Bob's own code.
    await page.getByRole('button', { name: 'Send me a code' }).click();
    await typeCode(page, '34600000002');
    await page.getByRole('heading', { name: 'Your consents', level: 1 }).waitFor();
    expect(await page.textContent('main')).not.toContain(what);
    // Off the mobile network: a page that says so, and no list.
    await page.goto(`${demo.appUrl}/`);
    await chooseDevice(page, /WiFi/);
    await page.goto(`${demo.gatewayUrl}/apigateway/consents`);
    await page.getByRole('heading', { name: 'We could not recognise your line' }).waitFor();
  }, 60_000);

  it('WiFi: the operator cannot identify the device, and the app says so', async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    await chooseDevice(page, /WiFi/);
    await page.getByText('Not on the mobile network').waitFor();
    await page.getByRole('button', { name: 'Verify my number' }).click();

    await page.getByRole('heading', { name: 'Your phone is not on the mobile network' }).waitFor();
    await screenshot(page, 'frontend-wifi');
    // The way out: back to a mobile line.
    await chooseDevice(page, /Alice's phone/);
    await page.getByText('On the mobile network').waitFor();
  });

  it('backend flow: out-of-band consent on the subscriber phone, then the SIM swap result', async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    await page.getByLabel("Customer's phone number").fill('+34600000002');
    await page.getByRole('button', { name: 'Check for a SIM swap' }).click();
    await page.getByRole('heading', { name: "Waiting for the subscriber's consent" }).waitFor();
    await screenshot(page, 'backend-waiting');

    // The subscriber's phone, in a second page. (The link opens a new tab; following its address rather than
    // clicking it keeps the test clear of the status page's own refresh.)
    const href = await page.getByRole('link', { name: "Open the subscriber's phone" }).getAttribute('href');
    expect(href).toBe(`${demo.gatewayUrl}/demo/phone/34600000002`);
    const phone = await page.context().newPage();
    await phone.setViewportSize({ width: 420, height: 860 });
    await phone.goto(href!);
    // The inbox refreshes itself until the request is there.
    await phone.getByRole('button', { name: 'Allow' }).waitFor();
    expect(await phone.textContent('body')).toContain('Demo Shop asks for your consent');
    await screenshot(phone, 'backend-phone-inbox');
    await phone.getByRole('button', { name: 'Allow' }).click();
    await phone.getByText('your consent is recorded').waitFor();

    // The status page refreshes itself until the app has the token and the API's answer.
    await page.getByRole('heading', { name: 'The SIM was swapped recently' }).waitFor();
    expect(await page.locator('dt:text-is("API") + dd').textContent()).toContain('{"swapped":true}');
    await screenshot(page, 'backend-result');
  });
});
