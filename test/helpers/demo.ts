import type { RunningDemo } from '../../demo-app/start.js';
import { Browser, consentFormOf } from './browser.js';

/** A hidden form field's value on one of the demo's pages. */
export function hidden(page: string, name: string): string {
  const value = new RegExp(`name="${name}" value="([^"]*)"`).exec(page)?.[1];
  if (value === undefined) throw new Error(`no ${name} field on the page`);
  return value.replace(/&#38;/g, '&').replace(/&#61;/g, '=');
}

/** The authorization request the app sends the browser to from "Verify my number" (signed: each is good once). */
export async function appAuthorizeUrl(
  demo: RunningDemo,
  phoneNumber = '+34600000001',
  browser = new Browser(),
): Promise<URL> {
  const home = await (await browser.request(`${demo.appUrl}/`)).text();
  const start = await browser.request(`${demo.appUrl}/verify`, { form: { phoneNumber, _csrf: hidden(home, '_csrf') } });
  if (start.status !== 302) throw new Error(`/verify answered ${start.status}`);
  return new URL(start.headers.get('location')!);
}

/**
 * "Verify my number" over HTTP, as a browser on the first line clicks it: the app's authorization request,
 * the consent page, Allow, and the page the app ends on.
 */
export async function verifyNumber(
  demo: RunningDemo,
  phoneNumber = '+34600000001',
): Promise<{ authorizeUrl: URL; finalUrl: URL; page: string }> {
  const browser = new Browser();
  const authorizeUrl = await appAuthorizeUrl(demo, phoneNumber, browser);
  const consent = await browser.navigate(authorizeUrl);
  const form = consentFormOf(await consent.res.text());
  const answer = await browser.request(new URL(form.action, consent.url), {
    form: { ...form.fields, decision: 'allow' },
  });
  const done = await browser.navigate(new URL(answer.headers.get('location')!, consent.url));
  return { authorizeUrl, finalUrl: done.url, page: await done.res.text() };
}
