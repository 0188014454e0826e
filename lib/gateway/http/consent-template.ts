import { randomBytes } from 'node:crypto';
import type { ConsentRule } from '../../consent/policy.js';
import type { ConsentPageOptions, ConsentPageTexts } from '../options.js';
import { resolveLanguages, type PageLanguages } from '../page-language.js';
import { CONFIRMATION_TEXTS } from './confirmation-texts.js';
import { CONSENT_PAGE_DEFAULTS } from '../../defaults.js';

/**
 * The HTML of the frontend flow: the consent page and the error page. Plain, accessible, self-contained
 * (no scripts, no external fonts or stylesheets), brandable by options. Every value is escaped here.
 */

/** The consent page options, checked and completed once (see `resolveConsentPage`). */
export interface ConsentPageConfig extends PageLanguages {
  operatorName: string;
  primaryColor: string;
  primaryTextColor: string;
  backgroundColor: string;
  textColor: string;
  logoUrl: string | undefined;
  /** The CSP `img-src` source list the logo needs. */
  imgSrc: string;
  privacyPolicyUrl: string | undefined;
  /** The wording's version, as consent records keep it beside the notice's digest. */
  noticeVersion: string;
  cookieName: string;
  cookiePath: string;
  cookieSecret: string[];
  secureCookie: boolean;
}

export const DEFAULT_TEXTS: ConsentPageTexts = {
  title: 'Allow {client} to use information about your mobile line?',
  intro: '{client} is asking {operator} for access. Nothing is shared unless you allow it.',
  purposeLabel: 'Why it is asked for',
  scopeLabel: 'What it gets access to',
  allow: 'Allow',
  deny: 'Deny',
  footer: 'You can withdraw your consent at any time through {operator}.',
  consentsLink: 'See and withdraw your consents',
  errorTitle: 'The request could not be completed',
  errorRequest:
    'The link that brought you here is not valid any more, or it was not meant for this page. Return to the application and try again.',
  errorDenied: '{operator} could not let this request through. Return to the application and try again.',
  errorUnavailable: '{operator} cannot answer just now. Wait a moment, then try again.',
  errorServer: 'Something went wrong at {operator}. Try again later.',
  errorDetail: 'Details for the application developer',
  answeredAllow: 'You allowed {client} to use this information.',
  answeredDeny: 'You did not allow {client} to use this information.',
  returnLink: 'Return to {client}',
  ...CONFIRMATION_TEXTS,
  consentsTitle: 'Your consents',
  consentsIntro:
    'The applications you allowed to use information about your mobile line through {operator}. Withdraw a consent and the application loses access at once.',
  consentsEmpty: 'No application has your consent at the moment.',
  consentsGiven: 'Given on',
  consentsViaPage: 'on the consent page',
  consentsConfirmed: 'confirmed with a code sent by {channel}',
  consentsViaOperator: 'through {operator}',
  consentsViaRegistry: 'recorded by {operator}',
  withdraw: 'Withdraw',
  withdrawn: '{client} no longer has your consent. It cannot use this information any more.',
  notIdentifiedTitle: 'We could not recognise your line',
  notIdentified:
    "Open this page on your phone, connected to {operator}'s mobile network (not over WiFi), to see your consents.",
};

const HEX = /^#(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
const NAMED = /^[a-z]{3,30}$/i;
const FUNCTIONAL = /^(?:rgba?|hsla?)\([0-9a-z.,%\s/+-]{1,60}\)$/i;

function colour(name: string, value: string | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  if (HEX.test(value) || NAMED.test(value) || FUNCTIONAL.test(value)) return value;
  throw new TypeError(`consentPage.${name} must be a CSS colour (#rrggbb, rgb(...), hsl(...) or a name)`);
}

// Characters that would end a CSP source expression or an HTML attribute.
const UNSAFE_IN_URL = /[\s"'<>;,\\`]/;

function logo(value: string | undefined): { logoUrl: string | undefined; imgSrc: string } {
  if (value === undefined) return { logoUrl: undefined, imgSrc: "'none'" };
  if (/^data:image\/[a-z0-9.+-]+[;,][^\s"'<>\\`]*$/i.test(value)) return { logoUrl: value, imgSrc: 'data:' };
  if (UNSAFE_IN_URL.test(value)) throw new TypeError('consentPage.logoUrl contains characters a URL does not');
  if (value.startsWith('/') && !value.startsWith('//')) return { logoUrl: value, imgSrc: "'self'" };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError('consentPage.logoUrl must be an https URL, a path on this host or a data:image URI');
  }
  if (url.protocol !== 'https:') {
    throw new TypeError('consentPage.logoUrl must be an https URL, a path on this host or a data:image URI');
  }
  // Exactly this one image is allowed, nothing else from its host.
  return { logoUrl: url.href, imgSrc: url.href };
}

function link(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`consentPage.${name} must be an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TypeError(`consentPage.${name} must be an http(s) URL`);
  return url.href;
}

/** Checks and completes the options; throws TypeError on anything that could break the page or its CSP. */
export function resolveConsentPage(
  options: ConsentPageOptions | undefined,
  issuer: URL,
  rules: readonly ConsentRule[],
): ConsentPageConfig {
  const o = options ?? {};
  const secrets = o.cookieSecret === undefined ? [randomBytes(32).toString('base64url')] : [o.cookieSecret].flat();
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s.length < 16)) {
    throw new TypeError('consentPage.cookieSecret must be one or more strings of at least 16 characters');
  }
  const cookieName = o.cookieName ?? CONSENT_PAGE_DEFAULTS.cookieName;
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(cookieName))
    throw new TypeError('consentPage.cookieName is not a valid cookie name');
  const cookiePath = o.cookiePath ?? (issuer.pathname.replace(/\/+$/, '') || '/');
  if (!cookiePath.startsWith('/') || /[\s;,]/.test(cookiePath))
    throw new TypeError('consentPage.cookiePath must be a path');
  const noticeVersion = o.noticeVersion ?? CONSENT_PAGE_DEFAULTS.noticeVersion;
  if (typeof noticeVersion !== 'string' || !/^[\x21-\x7e]{1,64}$/.test(noticeVersion))
    throw new TypeError('consentPage.noticeVersion must be 1 to 64 printable ASCII characters without spaces');
  const language = o.language ?? CONSENT_PAGE_DEFAULTS.language;
  if (!/^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$/.test(language))
    throw new TypeError('consentPage.language must be a BCP 47 language tag');
  return {
    operatorName: o.operatorName ?? CONSENT_PAGE_DEFAULTS.operatorName,
    primaryColor: colour('primaryColor', o.primaryColor, CONSENT_PAGE_DEFAULTS.primaryColor),
    primaryTextColor: colour('primaryTextColor', o.primaryTextColor, CONSENT_PAGE_DEFAULTS.primaryTextColor),
    backgroundColor: colour('backgroundColor', o.backgroundColor, CONSENT_PAGE_DEFAULTS.backgroundColor),
    textColor: colour('textColor', o.textColor, CONSENT_PAGE_DEFAULTS.textColor),
    ...logo(o.logoUrl),
    privacyPolicyUrl: link('privacyPolicyUrl', o.privacyPolicyUrl),
    ...resolveLanguages(
      {
        language,
        texts: {
          ...DEFAULT_TEXTS,
          ...Object.fromEntries(Object.entries(o.texts ?? {}).filter(([, v]) => typeof v === 'string')),
        },
        ...(o.labels === undefined ? {} : { labels: o.labels }),
        ...(o.languages === undefined ? {} : { languages: o.languages }),
      },
      DEFAULT_TEXTS,
      rules,
    ),
    noticeVersion,
    cookieName,
    cookiePath,
    cookieSecret: secrets,
    secureCookie: issuer.protocol === 'https:',
  };
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function fill(template: string, values: Record<string, string>): string {
  // `{code}` is not a value: the text message's template keeps it for the hook that sends the code.
  return template.replace(
    /\{(client|operator|attempts|minutes|scopes|purpose)\}/g,
    (_, key: string) => values[key] ?? '',
  );
}

/** The page's Content-Security-Policy: nothing but its own inline style (by nonce), the logo and its own form. */
export function contentSecurityPolicy(
  config: ConsentPageConfig,
  nonce: string,
  formTargets: readonly string[] = [],
): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    `img-src ${config.imgSrc}`,
    // Chrome applies form-action to the redirect after the POST too, so the application's callback is allowed.
    `form-action 'self'${formTargets.map((t) => ` ${t}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

function styles(c: ConsentPageConfig): string {
  return `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: ${c.backgroundColor}; color: ${c.textColor}; }
header { background: ${c.primaryColor}; color: ${c.primaryTextColor}; padding: 0.75rem 1rem; display: flex; align-items: center; gap: 0.75rem; }
header img { max-height: 2rem; max-width: 8rem; }
header p { margin: 0; font-weight: 600; }
main { max-width: 34rem; margin: 0 auto; padding: 1.5rem 1rem 2rem; }
h1 { font-size: 1.35rem; line-height: 1.3; margin: 0 0 1rem; }
h2 { font-size: 1rem; margin: 1.25rem 0 0.25rem; }
ul { margin: 0; padding-left: 1.25rem; }
code { font-size: 0.9em; overflow-wrap: anywhere; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; margin-top: 1.75rem; }
button { flex: 1 1 10rem; min-height: 3rem; font: inherit; font-weight: 600; border-radius: 0.5rem; cursor: pointer; padding: 0.5rem 1rem; }
button.allow { background: ${c.primaryColor}; color: ${c.primaryTextColor}; border: 2px solid ${c.primaryColor}; }
button.deny { background: transparent; color: ${c.textColor}; border: 2px solid currentColor; }
button:focus-visible, a:focus-visible { outline: 3px solid ${c.textColor}; outline-offset: 2px; }
footer { margin-top: 1.5rem; font-size: 0.9rem; }
label { display: block; font-weight: 600; margin: 1.25rem 0 0.25rem; }
input.code { font: inherit; font-size: 1.5rem; letter-spacing: 0.3em; width: 100%; max-width: 14rem; padding: 0.5rem 0.75rem; border: 2px solid ${c.textColor}; border-radius: 0.5rem; background: ${c.backgroundColor}; color: ${c.textColor}; }
input.code:focus-visible { outline: 3px solid ${c.primaryColor}; outline-offset: 2px; }
.hint { margin: 0 0 0.5rem; font-size: 0.9rem; }
.error { font-weight: 600; border-left: 0.3rem solid currentColor; padding-left: 0.75rem; }
.detail { margin-top: 2rem; font-size: 0.8rem; }
a { color: inherit; }
`;
}

/** The page around `body`: header with the branding, the styles (plus `extraStyles`, for one page's own). */
export function layout(c: ConsentPageConfig, nonce: string, title: string, body: string, extraStyles = ''): string {
  const logoImg = c.logoUrl === undefined ? '' : `<img src="${escapeHtml(c.logoUrl)}" alt="">`;
  return `<!DOCTYPE html>
<html lang="${escapeHtml(c.language)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${styles(c)}${extraStyles}</style>
</head>
<body>
<header>${logoImg}<p>${escapeHtml(c.operatorName)}</p></header>
<main>
${body}
</main>
</body>
</html>
`;
}

/**
 * The consent pages' footer: withdrawing is possible at any time, and the link to where (the consents page, next to
 * the consent page under the issuer), then the privacy notice when there is one.
 */
export function footer(c: ConsentPageConfig, values: Record<string, string>): string {
  const privacy =
    c.privacyPolicyUrl === undefined
      ? ''
      : ` <a href="${escapeHtml(c.privacyPolicyUrl)}" rel="noreferrer">${escapeHtml(c.operatorName)} privacy notice</a>`;
  return `<footer><p>${escapeHtml(fill(c.texts.footer, values))} <a href="consents">${escapeHtml(c.texts.consentsLink)}</a>${privacy}</p></footer>`;
}

export interface ConsentView {
  clientName: string;
  /** Plain-words purpose. */
  purpose: string;
  /** Each requested scope: the scope value and, where the policy has one, its plain-words description (shown instead). */
  scopes: { scope: string; description: string | undefined }[];
  interaction: string;
  csrf: string;
}

/** Why the consent is asked and what it gives access to: the consent page's and the code page's middle part. */
export function whatIsAsked(
  c: ConsentPageConfig,
  view: { purpose: string; scopes: readonly { scope: string; description: string | undefined }[] },
): string {
  const scopes = view.scopes.map((s) => `<li>${escapeHtml(s.description ?? s.scope)}</li>`).join('\n');
  return `<h2>${escapeHtml(c.texts.purposeLabel)}</h2>
<p>${escapeHtml(view.purpose)}</p>
<h2>${escapeHtml(c.texts.scopeLabel)}</h2>
<ul>
${scopes}
</ul>`;
}

export function renderConsentPage(c: ConsentPageConfig, nonce: string, view: ConsentView): string {
  const values = { client: view.clientName, operator: c.operatorName };
  const title = fill(c.texts.title, values);
  const body = `<h1 id="title">${escapeHtml(title)}</h1>
<p>${escapeHtml(fill(c.texts.intro, values))}</p>
${whatIsAsked(c, view)}
<form method="post" action="consent" aria-labelledby="title">
<input type="hidden" name="interaction" value="${escapeHtml(view.interaction)}">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<div class="actions">
<button type="submit" class="allow" name="decision" value="allow">${escapeHtml(c.texts.allow)}</button>
<button type="submit" class="deny" name="decision" value="deny">${escapeHtml(c.texts.deny)}</button>
</div>
</form>
${footer(c, values)}`;
  return layout(c, nonce, title, body);
}

/** The page of a request already answered (Back after Allow or Deny): the answer and a way back. */
export function renderAnsweredPage(
  c: ConsentPageConfig,
  nonce: string,
  view: { answered: 'allow' | 'deny'; clientName: string; returnTo: string | null },
): string {
  const values = { client: view.clientName, operator: c.operatorName };
  const title = fill(view.answered === 'allow' ? c.texts.answeredAllow : c.texts.answeredDeny, values);
  const link =
    view.returnTo === null
      ? ''
      : `\n<p><a href="${escapeHtml(view.returnTo)}">${escapeHtml(fill(c.texts.returnLink, values))}</a></p>`;
  return layout(c, nonce, title, `<h1>${escapeHtml(title)}</h1>${link}\n${footer(c, values)}`);
}

/** What an error means to the subscriber, by its OAuth code. */
function plainError(c: ConsentPageConfig, code: string): string {
  if (code === 'temporarily_unavailable' || code === 'slow_down') return c.texts.errorUnavailable;
  if (code === 'server_error') return c.texts.errorServer;
  if (code === 'access_denied') return c.texts.errorDenied;
  return c.texts.errorRequest;
}

/**
 * The error page: what happened and what to do, in the page's language; the OAuth code and its (English)
 * description only in a small detail line, for whoever helps the subscriber.
 */
export function renderErrorPage(
  c: ConsentPageConfig,
  nonce: string,
  code: string,
  description: string | undefined,
): string {
  const values = { operator: c.operatorName };
  const detail = description === undefined ? '' : ` ${escapeHtml(description)}`;
  const body = `<h1>${escapeHtml(c.texts.errorTitle)}</h1>
<p>${escapeHtml(fill(plainError(c, code), values))}</p>
<p class="detail"><small>${escapeHtml(c.texts.errorDetail)}: <code>${escapeHtml(code)}</code>${detail}</small></p>`;
  return layout(c, nonce, c.texts.errorTitle, body);
}
