import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ISSUER } from '../helpers/gateway.js';
import { ALICE_IP, CLIENTS_WITH_PKCE, SIM_SWAP, pkcePair } from '../helpers/frontend.js';
import { expectFrontendHeaders, expectSafe, report, startGateway, type PropertyGateway } from './support.js';

/**
 * redirect_uri (docs/protocol.md frontend step 1, RFC 9700 §4.1.3): exact string matching. Whatever near miss
 * of a registered URI is generated (case, trailing characters, encodings, userinfo, ports, truncation,
 * homoglyphs), /authorize redirects if and only if the value equals a registered URI character for
 * character, and otherwise answers a 400 page with no Location at all (never an open redirector).
 */

const REGISTERED = CLIENTS_WITH_PKCE.flatMap((c) =>
  (c.redirectUris ?? []).map((uri) => ({ clientId: c.clientId, uri })),
);
const { challenge } = pkcePair();

/** Encodes a query value three ways: as URLSearchParams does, as encodeURIComponent does, or only where it must be. */
function encodeValue(value: string, how: 'params' | 'component' | 'minimal'): string {
  if (how === 'params') return new URLSearchParams({ v: value }).toString().slice(2);
  if (how === 'component') return encodeURIComponent(value);
  return value.replace(/[^A-Za-z0-9\-._~:/?@!$'()*,;=]/gu, (c) => encodeURIComponent(c));
}

const mutation = (uri: string): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constant(uri),
    fc.constant(uri),
    fc.nat({ max: uri.length - 1 }).map((i) => uri.slice(0, i) + uri.charAt(i).toUpperCase() + uri.slice(i + 1)),
    fc
      .constantFrom(
        '/',
        '?',
        '#',
        '#x',
        '?x=1',
        '&x=1',
        '/..',
        '/../evil',
        '%2F',
        ' ',
        '\t',
        '\n',
        '.evil.example',
        '@evil.example',
        ':443',
        ':8443',
        '.',
        '%00',
        '\u200b',
        'x',
      )
      .map((s) => uri + s),
    fc.constantFrom(' ', 'x', 'https://evil.example/?', '\ufeff').map((s) => s + uri),
    fc.integer({ min: 1, max: 8 }).map((n) => uri.slice(0, Math.max(0, uri.length - n))),
    fc
      .nat({ max: uri.length - 1 })
      .map(
        (i) =>
          uri.slice(0, i) +
          encodeURIComponent(uri.charAt(i)).replace(/^[A-Za-z0-9]$/, (c) => `%${c.charCodeAt(0).toString(16)}`) +
          uri.slice(i + 1),
      ),
    fc.constant(uri.replace('https:', 'http:')),
    fc.constant(uri.replace('://', '://user@')),
    fc.constant(uri.replace('.example', '.exаmple')), // Cyrillic а
    fc.constant(uri.replace('example', 'EXAMPLE')),
    fc.constant(uri.replace(/\/([^/]*)$/, '//$1')),
    fc.string({ maxLength: 30 }),
  );

describe('redirect_uri exact matching', () => {
  let gw: PropertyGateway;
  beforeAll(async () => {
    gw = await startGateway({ clients: CLIENTS_WITH_PKCE });
  });
  afterAll(async () => {
    report('redirect-uri', [gw]);
    expect(gw.internalErrors).toEqual([]);
    await gw.close();
  });

  it('redirects if and only if redirect_uri equals a URI registered for the client, character for character', async () => {
    const scenario = fc
      .constantFrom(...REGISTERED)
      .chain((r) =>
        fc.tuple(
          fc.constant(r),
          mutation(r.uri),
          fc.constantFrom('params', 'component', 'minimal'),
          fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
        ),
      );
    await fc.assert(
      fc.asyncProperty(scenario, async ([registered, candidate, how, state]) => {
        const params: [string, string][] = [
          ['response_type', 'code'],
          ['client_id', registered.clientId],
          ['redirect_uri', candidate],
          ['scope', SIM_SWAP],
          ['code_challenge', challenge],
          ['code_challenge_method', 'S256'],
        ];
        if (state !== undefined && state !== '') params.push(['state', state]);
        const query = params.map(([k, v]) => `${k}=${encodeValue(v, how as 'params')}`).join('&');
        const res = await gw.send({
          method: 'GET',
          path: `/apigateway/authorize?${query}`,
          headers: { 'x-forwarded-for': ALICE_IP },
        });
        expectSafe(res);
        expectFrontendHeaders(res);
        const exact = REGISTERED.some((r) => r.clientId === registered.clientId && r.uri === candidate);
        if (!exact) {
          expect(res.status, `${candidate} redirected`).toBe(400);
          expect(res.headers.location).toBeUndefined();
          expect(res.headers['content-type']).toMatch(/^text\/html/);
          return;
        }
        expect(res.status).toBe(302);
        const location = res.headers.location!;
        expect(location.startsWith(candidate + (candidate.includes('?') ? '&' : '?'))).toBe(true);
        const query2 = new URLSearchParams(location.slice(location.indexOf('?') + 1));
        // app-2 is registered for CIBA only: its exact URI gets the error; the others get a code.
        if (registered.clientId === 'app-2') expect(query2.get('error')).toBe('unauthorized_client');
        else expect(query2.get('code')).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
        expect(query2.get('iss')).toBe(ISSUER);
        expect(query2.getAll('state')).toEqual(state === undefined || state === '' ? [] : [state]);
        if (candidate.includes('?tenant=7')) expect(query2.get('tenant')).toBe('7');
      }),
      { numRuns: 500 },
    );
  });

  it('another client’s registered URI, a client_id or redirect_uri sent twice, or an unknown client: a 400 page, no Location', async () => {
    const scenario = fc.oneof(
      // Another client's URI.
      fc
        .tuple(fc.constantFrom(...REGISTERED), fc.constantFrom(...REGISTERED))
        .filter(([a, b]) => a.clientId !== b.clientId)
        .map(([a, b]) => [
          ['client_id', a.clientId],
          ['redirect_uri', b.uri],
        ]),
      // The registered URI, twice (even identical).
      fc.constantFrom(...REGISTERED).map((r) => [
        ['client_id', r.clientId],
        ['redirect_uri', r.uri],
        ['redirect_uri', r.uri],
      ]),
      fc.constantFrom(...REGISTERED).map((r) => [
        ['client_id', r.clientId],
        ['client_id', r.clientId],
        ['redirect_uri', r.uri],
      ]),
      // Unknown or missing client.
      fc.tuple(fc.string({ maxLength: 12 }), fc.constantFrom(...REGISTERED)).map(([id, r]) => [
        ['client_id', `${id}x`],
        ['redirect_uri', r.uri],
      ]),
      fc.constantFrom(...REGISTERED).map((r) => [['redirect_uri', r.uri]]),
      fc.constantFrom(...REGISTERED).map((r) => [['client_id', r.clientId]]),
    );
    await fc.assert(
      fc.asyncProperty(scenario, async (pairs) => {
        const search = new URLSearchParams([
          ['response_type', 'code'],
          ['scope', SIM_SWAP],
          ['state', 's'],
          ...(pairs as [string, string][]),
        ]);
        const res = await gw.send({
          method: 'GET',
          path: `/apigateway/authorize?${search}`,
          headers: { 'x-forwarded-for': ALICE_IP },
        });
        expectSafe(res);
        expectFrontendHeaders(res);
        expect(res.status).toBe(400);
        expect(res.headers.location).toBeUndefined();
      }),
      { numRuns: 150 },
    );
  });
});
