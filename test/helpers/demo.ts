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

/** The newest confirmation code in the phone's text messages (the demo's `sendConsentConfirmation`). */
export async function codeFromPhone(demo: RunningDemo, phoneNumber: string): Promise<string> {
  const phone = await (await fetch(`${demo.gatewayUrl}/demo/phone/${phoneNumber.slice(1)}`)).text();
  const code = /<strong class="sms-code">([0-9]{6})<\/strong>/.exec(phone)?.[1];
  if (code === undefined) throw new Error('no code in the phone inbox');
  return code;
}

/**
 * "Verify my number" over HTTP, as a browser on the first line clicks it: the app's authorization request,
 * the consent page, Allow, the code the operator texted to the phone, and the page the app ends on.
 */
export async function verifyNumber(
  demo: RunningDemo,
  phoneNumber = '+34600000001',
): Promise<{ authorizeUrl: URL; finalUrl: URL; page: string }> {
  const browser = new Browser();
  const authorizeUrl = await appAuthorizeUrl(demo, phoneNumber, browser);
  const consent = await browser.navigate(authorizeUrl);
  const form = consentFormOf(await consent.res.text());
  const target = new URL(form.action, consent.url);
  // Allow sends the code (the demo's rules require confirmation); the page then asks for it.
  const asked = await browser.request(target, { form: { ...form.fields, decision: 'allow' } });
  if (asked.status !== 303) throw new Error(`Allow answered ${asked.status}`);
  const code = await codeFromPhone(demo, phoneNumber);
  const answer = await browser.request(target, { form: { ...form.fields, decision: 'allow', code } });
  const done = await browser.navigate(new URL(answer.headers.get('location')!, consent.url));
  return { authorizeUrl, finalUrl: done.url, page: await done.res.text() };
}
