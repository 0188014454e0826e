/**
 * Debian's chromium driven by playwright-core, for the demo's end-to-end tests. Without a browser the tests
 * skip with a message, except under CI (CI=true), where a missing browser must fail the run.
 */
import { accessSync, constants, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
export const SCREENSHOTS = join(process.cwd(), 'test-artifacts', 'screenshots');

/** Why the browser tests cannot run here, or undefined. */
export function chromiumMissing(): string | undefined {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return undefined;
  } catch {
    return `no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_BIN)`;
  }
}

/** Skip (with a warning) only outside CI. Under CI a missing browser fails in launchChromium(). */
export function browserSkip(suite: string): boolean {
  const missing = chromiumMissing();
  const skip = missing !== undefined && process.env.CI !== 'true';
  if (skip) console.warn(`Skipping ${suite}: ${missing}`);
  return skip;
}

/**
 * Headless, no sandbox (the tests run as root), nothing in the background that would reach out. Playwright
 * gives every launch a new, empty user-data-dir (a temp profile it deletes on close).
 */
export async function launchChromium(): Promise<Browser> {
  const missing = chromiumMissing();
  if (missing) throw new Error(`${missing}; with CI=true the browser tests must run`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // One renderer for the demo's two loopback origins (one site): fewer processes, less memory.
      '--renderer-process-limit=1',
      '--disable-features=site-per-process',
    ],
  });
}

/** Saves a full-page screenshot under test-artifacts/screenshots/ (gitignored). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
