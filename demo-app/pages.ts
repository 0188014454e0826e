/**
 * The demo's HTML: plain, accessible pages with no scripts and no external assets. Every interpolated value
 * is escaped by the `html` tag; only `Html` values (already built by the tag) pass through as markup.
 */
import { randomBytes } from 'node:crypto';
import type { Response } from 'express';

export class Html {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup;
  }
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

type Value = Html | string | number | boolean | undefined | null | readonly Value[];

function render(value: Value): string {
  if (value === undefined || value === null || value === false) return '';
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** Tagged template: `html\`<p>${text}</p>\`` escapes `text`; nested `html` results and arrays of them are kept. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/** A small logo, also served as the favicon: a rounded square with signal bars. */
export function logoSvg(colour: string, textColour: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" role="img" aria-label="">
<rect width="32" height="32" rx="7" fill="${textColour}"/>
<g fill="${colour}"><rect x="6" y="19" width="4" height="7" rx="1"/><rect x="12" y="14" width="4" height="12" rx="1"/><rect x="18" y="9" width="4" height="17" rx="1"/><rect x="24" y="5" width="4" height="21" rx="1" opacity=".45"/></g>
</svg>`;
}

/** Who a page speaks for: the operator (gateway pages) or the application. */
export interface Brand {
  name: string;
  /** Small text on the right of the header bar, e.g. "Operator gateway · demo". */
  role: string;
  color: string;
  textColor: string;
  /** A path on the same host. */
  logoUrl?: string;
}

export interface PageOptions {
  title: string;
  brand: Brand;
  body: Html;
  status?: number;
  /** Seconds after which the page reloads itself (no JavaScript: `<meta http-equiv="refresh">`). */
  refresh?: number;
  /** Origins a form may post to or be redirected to after posting (Chrome applies form-action to redirects). */
  formTargets?: readonly string[];
  /** Narrow layout, like a phone screen. */
  narrow?: boolean;
  /** A line under the page (links, context). */
  footer?: Html;
}

function styles(brand: Brand, narrow: boolean): string {
  return `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #f3f4f6; color: #1f2328; }
header.bar { background: ${brand.color}; color: ${brand.textColor}; padding: 0.75rem 1.25rem; display: flex; align-items: center; gap: 0.75rem; flex-wrap: wrap; }
header.bar img { height: 2rem; width: 2rem; }
header.bar .name { margin: 0; font-weight: 700; font-size: 1.1rem; }
header.bar .role { margin: 0 0 0 auto; font-size: 0.875rem; opacity: 0.95; }
main { max-width: ${narrow ? '30rem' : '64rem'}; margin: 0 auto; padding: 1.5rem 1rem 2.5rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 0.5rem; }
h2 { font-size: 1.15rem; line-height: 1.3; margin: 0 0 0.5rem; }
p { margin: 0.5rem 0; }
.lead { margin: 0 0 1.25rem; color: #424a53; }
.cards { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(17rem, 1fr)); align-items: start; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 0.75rem; padding: 1.25rem; margin: 0 0 1rem; }
.cards .card { margin: 0; }
main > .card:only-child { max-width: 46rem; }
form > button { margin-top: 1rem; }
.card.ok { border-left: 0.4rem solid #1a7f37; }
.card.bad { border-left: 0.4rem solid #cf222e; }
.card.wait { border-left: 0.4rem solid #bf8700; }
.step { display: inline-block; font-size: 0.8rem; font-weight: 700; text-transform: uppercase; letter-spacing: 0.04em; color: #57606a; margin-bottom: 0.25rem; }
label { display: block; font-weight: 600; margin: 0.75rem 0 0.25rem; }
input[type=tel], input[type=text] { width: 100%; font: inherit; padding: 0.5rem 0.625rem; border: 1px solid #6e7781; border-radius: 0.5rem; background: #fff; color: inherit; }
.hint { font-size: 0.875rem; color: #57606a; margin: 0.25rem 0 0; }
fieldset { border: 0; padding: 0; margin: 0; }
legend { font-weight: 600; margin-bottom: 0.5rem; }
.choice { display: flex; gap: 0.625rem; align-items: flex-start; padding: 0.625rem 0.75rem; border: 1px solid #d0d7de; border-radius: 0.5rem; margin: 0 0 0.5rem; background: #fff; font-weight: 400; }
.choice input { margin-top: 0.3rem; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; margin-top: 1rem; }
button, a.button { display: inline-block; font: inherit; font-weight: 600; padding: 0.625rem 1.1rem; min-height: 2.75rem; border-radius: 0.5rem; border: 2px solid ${brand.color}; background: ${brand.color}; color: ${brand.textColor}; cursor: pointer; text-decoration: none; }
button.secondary, a.button.secondary { background: #fff; color: #1f2328; border-color: #1f2328; }
.actions button { flex: 1 1 8rem; }
:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
a { color: #0550ae; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; background: #eef1f4; padding: 0.1rem 0.3rem; border-radius: 0.25rem; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0.75rem 0 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; font-size: 0.8rem; font-weight: 700; padding: 0.1rem 0.5rem; border-radius: 1rem; background: #ddf4e4; color: #0f5323; }
.badge.off { background: #ffe2e0; color: #82071e; }
.muted { color: #57606a; font-size: 0.875rem; }
ul.plain { list-style: none; padding: 0; margin: 0.5rem 0 0; }
ul.plain li { margin: 0.25rem 0; }
footer.page { max-width: ${narrow ? '30rem' : '64rem'}; margin: 0 auto; padding: 0 1rem 2rem; font-size: 0.875rem; color: #57606a; }
`;
}

/** Sends a whole page with its security headers: CSP (style by nonce, images from this host), no framing, no caching. */
export function sendPage(res: Response, options: PageOptions): void {
  const nonce = randomBytes(16).toString('base64');
  const formTargets = (options.formTargets ?? []).map((t) => ` ${t}`).join('');
  res.status(options.status ?? 200);
  res.set({
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self'; form-action 'self'${formTargets}; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
  });
  const { brand } = options;
  const page = html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.refresh === undefined ? '' : html`<meta http-equiv="refresh" content="${options.refresh}">`}
<title>${options.title} · ${brand.name}</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<style nonce="${nonce}">${new Html(styles(brand, options.narrow ?? false))}</style>
</head>
<body>
<header class="bar">${brand.logoUrl ? html`<img src="${brand.logoUrl}" alt="">` : ''}<p class="name">${brand.name}</p><p class="role">${brand.role}</p></header>
<main>
${options.body}
</main>
${options.footer ? html`<footer class="page">${options.footer}</footer>` : ''}
</body>
</html>
`;
  res.send(page.markup);
}

/** `+34600000001` → `+34 600 000 001` (for reading; E.164 stays the value). */
export function spacedNumber(phone: string): string {
  const digits = phone.slice(1);
  const cc = digits.length > 9 ? digits.slice(0, digits.length - 9) : '';
  const rest = digits.slice(cc.length);
  return `+${cc}${cc ? ' ' : ''}${rest.replace(/(\d{3})(?=\d)/g, '$1 ')}`.trim();
}

/** Shows a token's shape without disclosing it: the first and last 4 characters. */
export function maskToken(token: string): string {
  return token.length <= 12 ? '••••' : `${token.slice(0, 4)}…${token.slice(-4)}`;
}

/** A DPV purpose in plain words: `FraudPreventionAndDetection` → `fraud prevention and detection`. */
export function purposeWords(purpose: string): string {
  return purpose
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1 $2')
    .toLowerCase();
}

/** `95_000` → `1 min 35 s`. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}
