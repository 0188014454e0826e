import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseScope } from '../../lib/identity/scope.js';
import { OAuthError } from '../../lib/index.js';

/**
 * scope (docs/protocol.md): `dpv:<Purpose>#<scope>` or CAMARA's `dpv:<Purpose> <scope> …`, `openid` optional,
 * exactly one purpose. Requests built from that grammar parse to what they say; every way of breaking
 * it is invalid_scope (or invalid_request when nothing is there); nothing else is ever thrown.
 */

const RUNS = 300;

function codeOf(value: string): string {
  try {
    parseScope(value);
    return 'ok';
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    return error.code;
  }
}

const purpose = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,24}$/);
const apiScope = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9:._/-]{0,24}$/),
  fc.constantFrom(
    'sim-swap',
    'device-location',
    'number-verification',
    'sim-swap:check',
    'location-verification:verify',
  ),
);
/** One or more spaces: the parser reads tokens between single spaces and skips empty ones. */
const gap = fc.integer({ min: 1, max: 3 }).map((n) => ' '.repeat(n));

interface Request {
  text: string;
  purpose: string;
  scopes: string[];
  openid: boolean;
  offlineAccess: boolean;
  tokens: string[];
}

/** A valid request from the grammar: tokens in any order, repeats allowed, `openid` and `offline_access` anywhere. */
const validRequest: fc.Arbitrary<Request> = fc
  .record({
    purpose,
    scopes: fc.array(apiScope, { minLength: 1, maxLength: 4 }),
    hashForm: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
    openid: fc.nat({ max: 2 }),
    offline: fc.nat({ max: 2 }),
    order: fc.array(fc.nat(), { minLength: 10, maxLength: 10 }),
    gaps: fc.array(gap, { minLength: 10, maxLength: 10 }),
    edges: fc.tuple(fc.constantFrom('', ' ', '  '), fc.constantFrom('', ' ')),
  })
  .map(({ purpose: p, scopes, hashForm, openid, offline, order, gaps, edges }) => {
    const tokens: string[] = [];
    let bare = false;
    scopes.forEach((s, i) => {
      if (hashForm[i]) tokens.push(`dpv:${p}#${s}`);
      else {
        tokens.push(s);
        bare = true;
      }
    });
    if (bare || tokens.length === 0) tokens.push(`dpv:${p}`);
    for (let i = 0; i < openid; i++) tokens.push('openid');
    for (let i = 0; i < offline; i++) tokens.push('offline_access');
    // A stable shuffle driven by the generated order.
    const shuffled = tokens
      .map((t, i) => [order[i % order.length]! + i / 100, t] as const)
      .sort((a, b) => a[0] - b[0])
      .map(([, t]) => t);
    const text = edges[0] + shuffled.map((t, i) => (i === 0 ? t : gaps[i % gaps.length] + t)).join('') + edges[1];
    // The model: API scopes in first-seen order without repeats; tokens echoed once each, in order.
    const seen: string[] = [];
    const model: string[] = [];
    for (const t of shuffled) {
      if (!seen.includes(t)) seen.push(t);
      const api =
        t === 'openid' || t === 'offline_access'
          ? undefined
          : t.startsWith('dpv:')
            ? t.includes('#')
              ? t.slice(t.indexOf('#') + 1)
              : undefined
            : t;
      if (api !== undefined && !model.includes(api)) model.push(api);
    }
    return { text, purpose: p, scopes: model, openid: openid > 0, offlineAccess: offline > 0, tokens: seen };
  });

describe('scope properties', () => {
  it('requests from the grammar parse to their purpose, API scopes, openid, offline_access and the echoed scope string', () => {
    fc.assert(
      fc.property(validRequest, (r) => {
        expect(parseScope(r.text)).toEqual({
          purpose: r.purpose,
          scopes: r.scopes,
          openid: r.openid,
          offlineAccess: r.offlineAccess,
          value: r.tokens.join(' '),
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('two purposes in one request are invalid_scope', () => {
    fc.assert(
      fc.property(validRequest, purpose, apiScope, fc.boolean(), (r, other, s, hash) => {
        fc.pre(other !== r.purpose);
        const extra = hash ? `dpv:${other}#${s}` : `dpv:${other}`;
        expect(codeOf(`${r.text} ${extra}`)).toBe('invalid_scope');
        expect(codeOf(`${extra} ${r.text}`)).toBe('invalid_scope');
      }),
      { numRuns: RUNS },
    );
  });

  it('near misses are invalid_scope: characters RFC 6749 forbids, tabs and newlines, a bad purpose or API scope, no purpose, no API scope', () => {
    const forbidden = fc.constantFrom(
      '"',
      '\\',
      '\t',
      '\n',
      '\r',
      '\0',
      '\x7f',
      '\u00a0',
      'é',
      '\u2028',
      '😀',
      '\ufeff',
    );
    const nearMiss = fc.oneof(
      fc
        .tuple(validRequest, forbidden, fc.nat())
        .map(([r, c, at]) => {
          const i = r.text.length === 0 ? 0 : at % r.text.length;
          return r.text.slice(0, i) + c + r.text.slice(i);
        })
        .filter((t) => t.trim() !== '' && t.split(' ').some((x) => x !== '')),
      fc.tuple(purpose, apiScope).map(([p, s]) => `dpv:${p}#${s}#x`),
      fc.tuple(purpose, apiScope).map(([p, s]) => `dpv:${p}#${s} dpv:${p}#`),
      fc
        .tuple(fc.constantFrom('1', '-', '_', ':', 'dpv:'), purpose, apiScope)
        .map(([bad, p, s]) => `dpv:${bad}${p}#${s}`),
      apiScope.map((s) => `dpv:#${s}`),
      fc
        .tuple(
          purpose,
          fc.constantFrom(
            '-x',
            '.x',
            '/x',
            ':x',
            'x*',
            'x!',
            "x'",
            'x,',
            'x(',
            'x)',
            'x[',
            'x]',
            'x{',
            'x}',
            'x$',
            'x%',
            'x@',
          ),
        )
        .map(([p, s]) => `dpv:${p}#${s}`),
      fc.array(apiScope, { minLength: 1, maxLength: 3 }).map((s) => s.join(' ')), // no purpose
      fc.array(apiScope, { minLength: 1, maxLength: 3 }).map((s) => `openid ${s.join(' ')}`),
      purpose.map((p) => `dpv:${p}`), // no API scope
      purpose.map((p) => `openid dpv:${p} openid`),
      fc.constant('openid'),
    );
    fc.assert(
      fc.property(nearMiss, (value) => {
        expect(codeOf(value), JSON.stringify(value)).toBe('invalid_scope');
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('nothing but spaces is invalid_request (scope is required)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 50 }), (n) => {
        expect(codeOf(' '.repeat(n))).toBe('invalid_request');
      }),
      { numRuns: 20 },
    );
  });

  it('anything at all: a result made only of grammar parts, or invalid_scope / invalid_request', () => {
    const anything = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc
        .array(
          fc.oneof(fc.constantFrom('openid', 'dpv:', '#', ' ', 'dpv:A#b', 'c', ':', '/'), fc.string({ maxLength: 6 })),
          { maxLength: 10 },
        )
        .map((a) => a.join('')),
    );
    fc.assert(
      fc.property(anything, (value) => {
        let parsed: ReturnType<typeof parseScope>;
        try {
          parsed = parseScope(value);
        } catch (error) {
          expect(error).toBeInstanceOf(OAuthError);
          expect(['invalid_scope', 'invalid_request']).toContain((error as OAuthError).code);
          return;
        }
        expect(parsed.purpose).toMatch(/^[A-Za-z][A-Za-z0-9]*$/);
        expect(parsed.scopes.length).toBeGreaterThan(0);
        for (const s of parsed.scopes) expect(s).toMatch(/^[A-Za-z0-9][A-Za-z0-9:._/-]*$/);
        expect(new Set(parsed.scopes).size).toBe(parsed.scopes.length);
        // The echoed value is the request's own tokens, once each: nothing invented.
        const tokens = value.split(' ').filter((t) => t !== '');
        expect(parsed.value.split(' ').every((t) => tokens.includes(t))).toBe(true);
      }),
      { numRuns: RUNS * 2 },
    );
  });
});
