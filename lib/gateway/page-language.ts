import type { Request, Response } from 'express';
import type { ConsentRule } from '../consent/policy.js';
import type { ConsentPageTexts, LabelWording, PageLabels, PageLanguageOptions } from './options.js';

/**
 * The languages the subscriber pages speak (`consentPage.language`, `labels` and `languages`): which one a request
 * gets (its `Accept-Language`, among the operator's), and the operator's words for purposes and scopes, per place
 * (the request on the consent page, the list on the consents page, the text message), with the built-in English
 * words as the fallback.
 */

/** Where a purpose or a scope is named. */
export type LabelPlace = 'request' | 'list' | 'message';

/** One language's wording, checked and completed. */
export interface PageLanguage {
  language: string;
  texts: ConsentPageTexts;
  purposes: ReadonlyMap<string, LabelWording>;
  scopes: ReadonlyMap<string, LabelWording>;
}

/** What `negotiate` picks from: the page's language first, then the others (keys lower-cased). */
export interface PageLanguages extends PageLanguage {
  others: ReadonlyMap<string, PageLanguage>;
}

const TAG = /^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$/;

/** A DPV purpose in plain words: `FraudPreventionAndDetection` → `fraud prevention and detection`. */
export function purposeWords(purpose: string): string {
  return purpose
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1 $2')
    .toLowerCase();
}

function wording(value: unknown, path: string): LabelWording {
  if (typeof value === 'string' && value.trim() !== '') return value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      if (key !== 'request' && key !== 'list' && key !== 'message')
        throw new TypeError(`${path}.${key} is not a place: use request, list or message`);
      if (typeof o[key] !== 'string' || (o[key] as string).trim() === '')
        throw new TypeError(`${path}.${key} must be a non-empty string`);
    }
    if (o.request === undefined) throw new TypeError(`${path}.request is required (list and message default to it)`);
    return o as unknown as LabelWording;
  }
  throw new TypeError(`${path} must be a non-empty string or { request, list?, message? }`);
}

function labelMap(
  values: Record<string, unknown> | undefined,
  path: string,
  known: ReadonlySet<string>,
  what: string,
): Map<string, LabelWording> {
  if (values === undefined) return new Map();
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    throw new TypeError(`${path} must be an object of ${what} → wording`);
  return new Map(
    Object.entries(values).map(([key, value]) => {
      // A label no rule uses is a typo that would leave the page in the built-in English.
      if (!known.has(key))
        throw new TypeError(`${path}.${key}: no consentPolicy rule has this ${what} (known: ${[...known].join(', ')})`);
      return [key, wording(value, `${path}.${key}`)];
    }),
  );
}

function resolveOne(
  language: string,
  path: string,
  texts: ConsentPageTexts,
  labels: PageLabels | undefined,
  rules: readonly ConsentRule[],
): PageLanguage {
  if (labels !== undefined && (typeof labels !== 'object' || labels === null || Array.isArray(labels)))
    throw new TypeError(`${path} must be an object: { purposes?, scopes? }`);
  for (const key of Object.keys(labels ?? {}))
    if (key !== 'purposes' && key !== 'scopes')
      throw new TypeError(`${path}.${key} is not an option: purposes or scopes`);
  return {
    language,
    texts,
    purposes: labelMap(labels?.purposes, `${path}.purposes`, new Set(rules.map((r) => r.purpose)), 'purpose'),
    scopes: labelMap(labels?.scopes, `${path}.scopes`, new Set(rules.map((r) => r.scope)), 'scope'),
  };
}

function completeTexts(defaults: ConsentPageTexts, texts: unknown, path: string): ConsentPageTexts {
  if (texts === undefined) return defaults;
  if (typeof texts !== 'object' || texts === null || Array.isArray(texts))
    throw new TypeError(`${path} must be an object of texts`);
  for (const [name, text] of Object.entries(texts)) {
    if (!Object.hasOwn(defaults, name))
      throw new TypeError(`${path}.${name} is not a text of the pages (see ConsentPageTexts)`);
    if (typeof text !== 'string') throw new TypeError(`${path}.${name} must be a string`);
  }
  return { ...defaults, ...(texts as Partial<ConsentPageTexts>) };
}

/**
 * Checks and completes the languages: the page's own (`language`, its `texts` already merged, `labels`) and each
 * of `languages` (its texts over the built-in English ones). Throws TypeError naming the option.
 */
export function resolveLanguages(
  page: {
    language: string;
    texts: ConsentPageTexts;
    labels?: PageLabels;
    languages?: Record<string, PageLanguageOptions>;
  },
  builtIn: ConsentPageTexts,
  rules: readonly ConsentRule[],
): PageLanguages {
  const own = resolveOne(page.language, 'consentPage.labels', page.texts, page.labels, rules);
  const others = new Map<string, PageLanguage>();
  const languages = page.languages ?? {};
  if (typeof languages !== 'object' || languages === null || Array.isArray(languages))
    throw new TypeError('consentPage.languages must be an object: { [BCP 47 tag]: { texts?, labels? } }');
  for (const [tag, options] of Object.entries(languages)) {
    const path = `consentPage.languages.${tag}`;
    if (!TAG.test(tag)) throw new TypeError(`${path}: the key must be a BCP 47 language tag such as es or pt-BR`);
    if (tag.toLowerCase() === page.language.toLowerCase())
      throw new TypeError(`${path}: this is consentPage.language; give its wording in consentPage.texts and labels`);
    if (typeof options !== 'object' || options === null || Array.isArray(options))
      throw new TypeError(`${path} must be an object: { texts?, labels? }`);
    for (const key of Object.keys(options))
      if (key !== 'texts' && key !== 'labels') throw new TypeError(`${path}.${key} is not an option: texts or labels`);
    const texts = completeTexts(builtIn, options.texts, `${path}.texts`);
    others.set(tag.toLowerCase(), resolveOne(tag, `${path}.labels`, texts, options.labels, rules));
  }
  return { ...own, others };
}

/** The ranges of an `Accept-Language` header, best first (`q=0` dropped). */
function ranges(header: string): string[] {
  return header
    .split(',')
    .map((part, i) => {
      const [range = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p)?.[1]).find((v) => v !== undefined);
      return { range: range.trim().toLowerCase(), q: q === undefined ? 1 : Number(q), i };
    })
    .filter((r) => r.range !== '' && r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((r) => r.range);
}

/** The language of the operator's that the subscriber's browser prefers; the page's own when none fits. */
export function negotiate<T extends PageLanguages>(page: T, header: string | undefined): PageLanguage {
  if (page.others.size === 0 || header === undefined) return page;
  const all: PageLanguage[] = [page, ...page.others.values()];
  const primary = (tag: string) => tag.toLowerCase().split('-')[0];
  for (const range of ranges(header.slice(0, 512))) {
    if (range === '*') return page;
    const exact = all.find((l) => l.language.toLowerCase() === range);
    if (exact) return exact;
    const near = all.find((l) => primary(l.language) === primary(range));
    if (near) return near;
  }
  return page;
}

/**
 * The page's configuration in the language this request gets. With other languages configured, the answer
 * varies with `Accept-Language` (caches are told) and says its language.
 */
export function speaking<T extends PageLanguages>(page: T, req: Request, res: Response): T {
  if (page.others.size === 0) return page;
  res.vary('Accept-Language');
  const chosen = negotiate(page, req.get('accept-language'));
  res.set('Content-Language', chosen.language);
  return chosen === page ? page : { ...page, ...chosen };
}

function place(value: LabelWording | undefined, where: LabelPlace): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  return value[where] ?? value.request;
}

/** A purpose in the operator's words for this place, else its DPV name in plain English words. */
export function purposeLabel(page: PageLanguage, purpose: string, where: LabelPlace): string {
  const label = place(page.purposes.get(purpose), where);
  if (label !== undefined) return label;
  const words = purposeWords(purpose);
  return where === 'message' ? words : words.charAt(0).toUpperCase() + words.slice(1);
}

/** A scope in the operator's words for this place, else the rule's `description` (undefined when neither). */
export function scopeLabel(
  page: PageLanguage,
  scope: string,
  where: LabelPlace,
  description: string | undefined,
): string | undefined {
  return place(page.scopes.get(scope), where) ?? description;
}
