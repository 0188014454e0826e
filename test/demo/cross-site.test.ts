/**
 * Issue 42, finding 1, in a real browser (Debian's chromium): a page of another site, opened on the subscriber's
 * phone, cannot make the operator text codes to the line, nor spend the codes that confirm the subscriber's
 * consent. The other site is served from another loopback address (127.0.0.2: another site than `localhost`,
 * where the demo runs), so the browser treats it as any site on the web: no `SameSite=Lax` cookie,
 * `Sec-Fetch-Site: cross-site`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { resolveConfig } from '../../demo-app/config.js';
import { startDemo, type RunningDemo } from '../../demo-app/start.js';
import { browserSkip, launchChromium } from '../helpers/chromium.js';

const skip = browserSkip('the cross-site browser tests');
const ALICE = '34600000001';

/** The other site: six images of the consents page, and forms that post to both of the operator's pages. */
function attackerPage(consents: string): string {
  const images = Array.from({ length: 6 }, (_, i) => `<img src="${consents}?n=${i}" alt="">`).join('\n');
  return `<!doctype html><html><head><title>Free ringtones</title></head><body>
${images}
<form method="post" action="${consents}"><input type="hidden" name="csrf" value="x"><input type="hidden" name="send" value="code"><button id="send">Send</button></form>
</body></html>`;
}

describe.skipIf(skip)('another site cannot make the operator send codes (chromium)', () => {
  let demo: RunningDemo;
  let browser: Browser;
  let attacker: Server;
  let attackerUrl: string;

  beforeAll(async () => {
    demo = await startDemo(resolveConfig({ ports: { gateway: 0, app: 0 } }, 'test'));
    browser = await launchChromium();
    const consents = `${demo.gatewayUrl}/apigateway/consents`;
    attacker = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(attackerPage(consents));
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.2', resolve));
    attackerUrl = `http://127.0.0.2:${(attacker.address() as AddressInfo).port}/`;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => (attacker ? attacker.close(resolve) : resolve(undefined)));
    await demo?.close();
  });

  /** The codes in Alice's text messages, read on the demo's phone page. */
  async function codesSent(page: Page): Promise<number> {
    const phone = await page.context().newPage();
    await phone.goto(`${demo.gatewayUrl}/demo/phone/${ALICE}`);
    await phone.getByRole('heading', { name: /^Messages from/ }).waitFor();
    const count = await phone.locator('.sms-code').count();
    await phone.close();
    return count;
  }

  it("six images and a form of another site send no code; Alice's own Allow then works", async () => {
    const context = await browser.newContext({ viewport: { width: 420, height: 860 } });
    context.setDefaultTimeout(10_000);
    try {
      const page = await context.newPage();
      // Chromium's opaque-response blocking (ORB) drops an image answered with HTML after the answer's headers
      // came: the gateway did serve each GET, to Alice's line (the demo's default device).
      const answered: string[] = [];
      page.on('requestfailed', (r) => {
        if (r.url().startsWith(`${demo.gatewayUrl}/apigateway/consents?n=`)) answered.push(r.failure()!.errorText);
      });
      page.on('requestfinished', (r) => {
        if (r.url().startsWith(`${demo.gatewayUrl}/apigateway/consents?n=`)) answered.push('finished');
      });
      await page.goto(attackerUrl, { waitUntil: 'load' });
      await expect.poll(() => answered.length).toBe(6);
      expect(new Set(answered)).toEqual(new Set(['net::ERR_BLOCKED_BY_ORB']));
      expect(await codesSent(page)).toBe(0);

      // The other site's form, posted: a 403 page, nothing sent.
      const [posted] = await Promise.all([
        page.waitForResponse((res) => res.url() === `${demo.gatewayUrl}/apigateway/consents`),
        page.click('#send'),
      ]);
      expect(posted.status()).toBe(403);
      await page.getByText('This form was sent from another site, so it is refused.').waitFor();
      expect(await codesSent(page)).toBe(0);

      // Alice, in the same browser: the application, the consent page, Allow, the code she was texted.
      await page.goto(`${demo.appUrl}/`);
      await page.getByRole('button', { name: 'Verify my number' }).click();
      await page.waitForURL(/\/apigateway\/consent\?/);
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.getByLabel('Confirmation code').waitFor();
      const phone = await context.newPage();
      await phone.goto(`${demo.gatewayUrl}/demo/phone/${ALICE}`);
      const code = await phone.locator('.sms-code').first().textContent();
      await phone.close();
      await page.getByLabel('Confirmation code').fill(code!);
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.waitForURL(`${demo.appUrl}/verified`);
      await page.getByRole('heading', { name: 'Number verified' }).waitFor();
      expect(await codesSent(page)).toBe(1);
    } finally {
      await context.close();
    }
  }, 60_000);
});
