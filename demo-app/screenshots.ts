/**
 * Regenerates the README's pictures: `npx tsx demo-app/screenshots.ts`
 *   docs/images/consent-page.png  the operator's consent page, as a phone shows it (420×860)
 *   docs/images/consent-confirmation.png  after Allow: the page asks for the code the operator texted (420×860)
 *   docs/images/demo-app.png      the sample application's home page (1100×800)
 *   docs/images/consents-confirmation.png, consents-list.png, consents-withdrawn.png
 *                                 the subscriber's consents page on the phone: the code the operator texted,
 *                                 then the list, before and after a withdrawal
 *   docs/images/consent-page-es.png, phone-message-es.png, consents-list-es.png
 *                                 the same in Spanish, the demo's second language, for a phone whose browser asks
 *                                 for it (Accept-Language): the consent page, the text message, the consents page
 * Starts the demo on free ports with the embedded defaults and drives Debian's chromium.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { resolveConfig } from './config.js';
import { DemoStartError, startDemo } from './start.js';
import { launchChromium } from '../test/helpers/chromium.js';

const out = join(process.cwd(), 'docs', 'images');
mkdirSync(out, { recursive: true });

// The default ports, so the pictures show the URLs a newcomer sees; any free ports if those are taken.
const demo = await startDemo(resolveConfig({}, 'screenshots')).catch((error: unknown) => {
  if (!(error instanceof DemoStartError)) throw error;
  console.warn(`${error.message}; using free ports instead`);
  return startDemo(resolveConfig({ ports: { gateway: 0, app: 0 } }, 'screenshots'));
});
const browser = await launchChromium();
try {
  const desktop = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const home = await desktop.newPage();
  await home.goto(`${demo.appUrl}/`);
  await home.screenshot({ path: join(out, 'demo-app.png') });

  const phone = await browser.newContext({ viewport: { width: 420, height: 860 }, isMobile: true, hasTouch: true });
  const page = await phone.newPage();
  await page.goto(`${demo.appUrl}/`);
  await page.getByRole('button', { name: 'Verify my number' }).click();
  await page.waitForURL(/\/consent\?/);
  await page.screenshot({ path: join(out, 'consent-page.png') });
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.getByLabel('Confirmation code').waitFor();
  await page.screenshot({ path: join(out, 'consent-confirmation.png') });

  // The code the operator texted, read on the demo's phone page (the newest first); then two consents on record
  // (number verification on the page, SIM swap on the phone), then the consents page, which asks for a code too.
  const newestCode = async (): Promise<string> => {
    const inbox = await (await fetch(`${demo.gatewayUrl}/demo/phone/34600000001`)).text();
    const code = /<strong class="sms-code">([0-9]{6})<\/strong>/.exec(inbox)?.[1];
    if (code === undefined) throw new Error('no code in the phone inbox');
    return code;
  };
  await page.getByLabel('Confirmation code').fill(await newestCode());
  await page.getByRole('button', { name: 'Confirm' }).click();
  await page.getByRole('heading', { name: 'Number verified' }).waitFor();
  await page.goto(`${demo.appUrl}/`);
  await page.getByRole('button', { name: 'Check for a SIM swap' }).click();
  await page.getByRole('heading', { name: "Waiting for the subscriber's consent" }).waitFor();
  await page.goto(`${demo.gatewayUrl}/demo/phone/34600000001`);
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.getByRole('button', { name: 'Open my consents page' }).click();
  await page.getByRole('button', { name: 'Send me a code' }).click();
  await page.getByLabel('Confirmation code').waitFor();
  await page.screenshot({ path: join(out, 'consents-confirmation.png') });
  await page.getByLabel('Confirmation code').fill(await newestCode());
  await page.getByRole('button', { name: 'Confirm' }).click();
  await page.getByRole('heading', { name: 'Your consents', level: 1 }).waitFor();
  await page.screenshot({ path: join(out, 'consents-list.png'), fullPage: true });
  await page
    .getByRole('listitem')
    .filter({ hasText: 'Confirm that a number you give is this line' })
    .getByRole('button', { name: /^Withdraw/ })
    .click();
  await page.getByRole('status').waitFor();
  await page.screenshot({ path: join(out, 'consents-withdrawn.png'), fullPage: true });
} catch (error) {
  await browser.close();
  throw error;
} finally {
  await demo.close();
}

// Spanish, on a fresh demo (no consent on record): a phone whose browser asks for Spanish.
const second = await startDemo(resolveConfig({ ports: { gateway: 0, app: 0 } }, 'screenshots'));
try {
  const phone = await browser.newContext({
    viewport: { width: 420, height: 860 },
    isMobile: true,
    hasTouch: true,
    locale: 'es-ES',
  });
  const page = await phone.newPage();
  await page.goto(`${second.appUrl}/`);
  await page.getByRole('button', { name: 'Verify my number' }).click();
  await page.waitForURL(/\/consent\?/);
  await page.screenshot({ path: join(out, 'consent-page-es.png') });
  await page.getByRole('button', { name: 'Permitir' }).click();
  await page.getByLabel('Código de confirmación').waitFor();
  const inbox = await phone.newPage();
  await inbox.goto(`${second.gatewayUrl}/demo/phone/34600000001`);
  await inbox.screenshot({ path: join(out, 'phone-message-es.png') });
  const newestCode = async (): Promise<string> => {
    await inbox.reload();
    return (await inbox.locator('.sms-code').first().textContent())!;
  };
  await page.getByLabel('Código de confirmación').fill(await newestCode());
  await page.getByRole('button', { name: 'Confirmar' }).click();
  await page.getByRole('heading', { name: 'Number verified' }).waitFor();
  await page.goto(`${second.gatewayUrl}${new URL(second.issuer).pathname}/consents`);
  await page.getByRole('button', { name: 'Enviarme un código' }).click();
  await page.getByLabel('Código de confirmación').fill(await newestCode());
  await page.getByRole('button', { name: 'Confirmar' }).click();
  await page.getByRole('heading', { name: 'Sus consentimientos', level: 1 }).waitFor();
  await page.screenshot({ path: join(out, 'consents-list-es.png'), fullPage: true });
  console.log(
    `wrote demo-app.png, consent-page.png, consent-confirmation.png, consents-confirmation.png, consents-list.png, consents-withdrawn.png, consent-page-es.png, phone-message-es.png and consents-list-es.png in ${out}`,
  );
} finally {
  await browser.close();
  await second.close();
}
