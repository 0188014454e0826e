/**
 * Issue 44 in a real browser (Debian's chromium) against the demo: a browser that asks for Spanish
 * (Accept-Language, from its locale) gets the consent page, the code in the phone's text message and the consents
 * page in Spanish, with the operator's words for purposes and scopes; Back after wrong codes never lands on
 * "confirm form resubmission" (Post/Redirect/Get); the footer leads to the consents page.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { resolveConfig } from '../../demo-app/config.js';
import { startDemo, type RunningDemo } from '../../demo-app/start.js';
import { browserSkip, launchChromium, screenshot } from '../helpers/chromium.js';

const skip = browserSkip('the subscriber pages browser tests');

describe.skipIf(skip)('the subscriber pages in the browser', () => {
  let demo: RunningDemo;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  async function newPage(locale?: string): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width: 420, height: 860 },
      ...(locale === undefined ? {} : { locale }),
    });
    context.setDefaultTimeout(10_000);
    contexts.push(context);
    return context.newPage();
  }

  /** The newest code in the phone's text messages, and the message's text and language. */
  async function newestMessage(page: Page): Promise<{ code: string; text: string; lang: string | null }> {
    const phone = await page.context().newPage();
    await phone.goto(`${demo.gatewayUrl}/demo/phone/34600000001`);
    const item = phone.locator('li:has(.sms-code)').first();
    const message = {
      code: (await item.locator('.sms-code').textContent())!,
      text: (await item.textContent())!,
      lang: await item.getAttribute('lang'),
    };
    await phone.close();
    return message;
  }

  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);

  // A demo per test: each starts with no consent on record, so the consent page shows.
  beforeEach(async () => {
    demo = await startDemo(resolveConfig({ ports: { gateway: 0, app: 0 } }, 'test'));
  }, 60_000);

  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close().catch(() => {});
    await demo?.close();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('Spanish for a browser that asks: the consent page, the text message and the consents page', async () => {
    const page = await newPage('es-ES');
    await page.goto(`${demo.appUrl}/`);
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await page.waitForURL(/\/apigateway\/consent\?/);
    await page.getByRole('heading', { name: '¿Permitir que Demo Shop use información de su línea móvil?' }).waitFor();
    expect(await page.getAttribute('html', 'lang')).toBe('es');
    const body = (await page.textContent('main'))!;
    expect(body).toContain('Prestarle el servicio que ha pedido');
    expect(body).toContain('confirmar que el número de teléfono que ha escrito es el de este teléfono');
    expect(body).not.toContain('Requested service provision');
    await screenshot(page, 'consent-page-es');

    await page.getByRole('button', { name: 'Permitir' }).click();
    await page.getByLabel('Código de confirmación').waitFor();
    const message = await newestMessage(page);
    expect(message.lang).toBe('es');
    expect(message.text).toBe(
      `Demo Mobile: su código es ${message.code}. Escríbalo para permitir que Demo Shop pueda confirmar su número de teléfono. Caduca en 5 min. No lo comparta.`,
    );
    await page.getByLabel('Código de confirmación').fill(message.code);
    await page.getByRole('button', { name: 'Confirmar' }).click();
    await page.getByRole('heading', { name: 'Number verified' }).waitFor();

    // The consents page, reached as the footer's link leads: its code, then the list in the list's words.
    await page.goto(`${demo.gatewayUrl}/apigateway/consents`);
    await page.getByRole('button', { name: 'Enviarme un código' }).click();
    await page.getByLabel('Código de confirmación').fill((await newestMessage(page)).code);
    await page.getByRole('button', { name: 'Confirmar' }).click();
    await page.getByRole('heading', { name: 'Sus consentimientos', level: 1 }).waitFor();
    const list = (await page.textContent('main'))!;
    expect(list).toContain('Para qué se pide: Prestarle el servicio que ha pedido');
    expect(list).toContain('A qué da acceso: Confirmar que un número que usted da es el de esta línea');
    await screenshot(page, 'consents-list-es');
  }, 60_000);

  it('Back after wrong codes: the code page again (a GET), never "confirm form resubmission"', async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await page.waitForURL(/\/apigateway\/consent\?/);
    await page.getByRole('button', { name: 'Allow' }).click();
    const field = page.getByLabel('Confirmation code');
    await field.waitFor();
    const { code } = await newestMessage(page);
    const wrong = (n: number) => String((Number(code) + n) % 1_000_000).padStart(6, '0');
    for (const n of [1, 2]) {
      await field.fill(wrong(n));
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('alert').waitFor();
    }
    expect(await page.getByRole('alert').textContent()).toBe('That code is not right. Attempts left: 1.');
    const back = await page.goBack();
    expect(back?.status()).toBe(200);
    await field.waitFor();
    expect(page.url()).toMatch(/\/apigateway\/consent\?interaction=/);
    // Said once: the page reached by Back asks for the code without the old error.
    expect(await page.getByRole('alert').count()).toBe(0);
    // And the right code still works from there.
    await field.fill(code);
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('heading', { name: 'Number verified' }).waitFor();
  }, 60_000);

  it("the footer's link opens the consents page", async () => {
    const page = await newPage();
    await page.goto(`${demo.appUrl}/`);
    await page.getByRole('button', { name: 'Verify my number' }).click();
    await page.waitForURL(/\/apigateway\/consent\?/);
    await page.getByRole('link', { name: 'See and withdraw your consents' }).click();
    await page.waitForURL(`${demo.gatewayUrl}/apigateway/consents`);
    await page.getByRole('button', { name: 'Send me a code' }).waitFor();
  }, 60_000);
});
