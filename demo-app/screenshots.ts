/**
 * Regenerates the README's pictures: `npx tsx demo-app/screenshots.ts`
 *   docs/images/consent-page.png  the operator's consent page, as a phone shows it (420×860)
 *   docs/images/consent-confirmation.png  after Allow: the page asks for the code the operator texted (420×860)
 *   docs/images/demo-app.png      the sample application's home page (1100×800)
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
  console.log(`wrote demo-app.png, consent-page.png and consent-confirmation.png in ${out}`);
} finally {
  await browser.close();
  await demo.close();
}
