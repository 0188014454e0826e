import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ISSUER } from '../helpers/gateway.js';
import {
  ALICE_IP,
  APP1_AUTH,
  BOB_IP,
  CALLBACK,
  CGNAT_IP,
  CLIENTS_WITH_PKCE,
  LOCATION,
  SIM_SWAP,
  consentForm,
  pkcePair,
} from '../helpers/frontend.js';
import {
  AUTHORIZE_ERRORS,
  DESCRIPTION_CHARSET,
  METHODS,
  expectFrontendHeaders,
  expectJsonError,
  expectSafe,
  formOf,
  headerValue,
  nastyText,
  randomHeaders,
  report,
  startGateway,
  type Answer,
  type PropertyGateway,
  type Sent,
} from './support.js';

/**
 * The frontend flow under generated requests (docs/protocol.md, "Frontend flow: GET /authorize", "Consent"):
 * GET /authorize answers a redirect exactly when client_id and redirect_uri are each sent once and
 * registered together, else a 400 page without Location; every redirect carries `error` or `code`, `iss`
 * and the state exactly as sent once. The consent page refuses every form it did not serve to that
 * session (403/400, nothing recorded, the request still answerable) and answers the real one with a 303.
 */

const REGISTERED = new Map(CLIENTS_WITH_PKCE.map((c) => [c.clientId, c.redirectUris ?? []]));
const { challenge } = pkcePair();
const AUTHORIZE_PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'login_hint',
  'nonce',
  'response_mode',
  'request',
  'request_uri',
  'max_age',
];
const GOOD = {
  response_type: ['code', 'token', 'code id_token'],
  client_id: [...REGISTERED.keys()],
  redirect_uri: [...REGISTERED.values()].flat(),
  scope: [
    SIM_SWAP,
    LOCATION,
    'openid dpv:FraudPreventionAndDetection sim-swap',
    'dpv:Marketing#device-location',
    'dpv:A#b dpv:C#d',
  ],
  state: ['s', 'a b&c=d', '\u00e9\u0000'],
  code_challenge: [challenge, 'short'],
  code_challenge_method: ['S256', 'plain'],
  prompt: ['none', 'consent', 'login', 'none consent', 'x'],
  login_hint: ['tel:+34600000001', 'tel:+34600000002', 'ipport:10.20.0.1', 'operatortoken:x', 'tel:1'],
  nonce: ['n'],
  response_mode: ['query', 'fragment', 'form_post'],
  request: ['eyJ'],
  request_uri: ['urn:x'],
  max_age: ['0'],
} as Record<string, string[]>;

/** Sometimes present (`often`: half of the time; otherwise one time in six), a generated value one time in five. */
const sometimes = (values: readonly string[], often = false): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { weight: often ? 1 : 5, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...values) }, { weight: 1, arbitrary: nastyText }),
    },
  );

/** A query of valid core parameters and generated optional ones, then generated changes: dropped, repeated, replaced, extra. */
const authorizeQuery: fc.Arbitrary<[string, string][]> = fc
  .record({
    client: fc.constantFrom(...REGISTERED.keys()),
    scope: fc.constantFrom(...GOOD.scope!),
    optional: fc.record({
      state: sometimes(GOOD.state!, true),
      prompt: sometimes(GOOD.prompt!),
      login_hint: sometimes(GOOD.login_hint!),
      nonce: sometimes(GOOD.nonce!),
      response_mode: sometimes(GOOD.response_mode!),
      request: fc.oneof(
        { weight: 20, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constantFrom(...GOOD.request!) },
      ),
      max_age: sometimes(GOOD.max_age!),
    }),
    changes: fc.array(
      fc.tuple(
        fc.constantFrom('drop', 'repeat', 'nasty', 'add'),
        fc.constantFrom(...AUTHORIZE_PARAMETERS),
        fc.oneof(nastyText, fc.constantFrom(...Object.values(GOOD).flat())),
      ),
      { maxLength: 3 },
    ),
    changeRate: fc.nat({ max: 3 }),
  })
  .map(({ client, scope, optional, changes, changeRate }) => {
    let pairs: [string, string][] = [
      ['response_type', 'code'],
      ['client_id', client],
      ['redirect_uri', REGISTERED.get(client)![0]!],
      ['scope', scope],
      ...(client === 'pkce-app'
        ? ([
            ['code_challenge', challenge],
            ['code_challenge_method', 'S256'],
          ] as [string, string][])
        : []),
    ];
    for (const [name, value] of Object.entries(optional)) if (value !== undefined) pairs.push([name, value]);
    // A quarter of the queries are left intact, so the deep paths (codes, consent, identification) are reached too.
    for (const [change, name, value] of changeRate === 0 ? [] : changes) {
      if (change === 'drop') pairs = pairs.filter(([n]) => n !== name);
      else if (change === 'repeat') pairs.push([name, pairs.find(([n]) => n === name)?.[1] ?? value]);
      else if (change === 'nasty') pairs = pairs.map(([n, v]) => [n, n === name ? value : v]);
      else pairs.push([nasty(name), value]);
    }
    return pairs;
  });

function nasty(name: string): string {
  return name.length % 2 === 0 ? name : `${name}[]`;
}

/** Encodes a query, sometimes leaving values raw (percent signs, spaces and non-ASCII percent-encoded as UTF-8 only). */
function queryString(pairs: readonly [string, string][], raw: boolean): string {
  return pairs
    .map(
      ([k, v]) =>
        `${encodeURIComponent(k)}=${raw ? v.replace(/[^\x21-\x7e]|[#&+]/gu, (c) => encodeURIComponent(c)) : encodeURIComponent(v)}`,
    )
    .join('&');
}

const device = fc.record({
  ip: fc.oneof(
    { weight: 3, arbitrary: fc.constant(ALICE_IP) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        BOB_IP,
        CGNAT_IP,
        '192.0.2.1',
        '2001:db8::1',
        '::ffff:10.20.0.1',
        '10.20.0.1, 10.20.0.2',
        'garbage',
        '',
      ),
    },
  ),
  port: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom('1500', '3000', '0', '70000', 'abc', ' 1500 ', '1500, 1501') },
  ),
  cookie: fc.option(
    fc.oneof(
      headerValue,
      fc.constantFrom('netauth.sid=s%3Aabc.def', 'netauth.sid=', 'netauth.sid=%E0%A4%A', 'a=b; netauth.sid=s:x.y'),
    ),
    { nil: undefined },
  ),
});

/** What every /authorize answer must be, given the query that was sent. */
function expectAuthorizeAnswer(method: string, pairs: readonly [string, string][], answer: Answer): void {
  expectSafe(answer);
  expectFrontendHeaders(answer);
  if (method !== 'GET' && method !== 'HEAD') {
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('GET, HEAD');
    expectJsonError(answer, ['invalid_request']);
    return;
  }
  const all = (name: string) => pairs.filter(([n]) => n === name).map(([, v]) => v);
  const clientIds = all('client_id');
  const redirectUris = all('redirect_uri');
  const registered =
    clientIds.length === 1 &&
    redirectUris.length === 1 &&
    (REGISTERED.get(clientIds[0]!) ?? []).includes(redirectUris[0]!);
  if (!registered) {
    expect(answer.status, answer.headers.location).toBe(400);
    expect(answer.headers.location).toBeUndefined();
    expect(answer.headers['content-type']).toMatch(/^text\/html/);
    if (method === 'HEAD') expect(answer.text).toBe('');
    return;
  }
  expect(answer.status).toBe(302);
  const location = answer.headers.location!;
  if (location.startsWith(`${ISSUER}/consent?interaction=`)) {
    expect(answer.headers['set-cookie']?.join(';')).toMatch(/netauth\.sid=/);
    return;
  }
  const target = redirectUris[0]!;
  expect(location.startsWith(target + (target.includes('?') ? '&' : '?'))).toBe(true);
  const query = new URLSearchParams(location.slice(location.indexOf('?') + 1));
  expect(query.getAll('iss')).toEqual([ISSUER]);
  const error = query.get('error');
  if (error === null) expect(query.get('code')).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
  else {
    expect(AUTHORIZE_ERRORS).toContain(error);
    expect(query.get('code')).toBeNull();
    expect(query.get('error_description') ?? '').toMatch(DESCRIPTION_CHARSET);
  }
  // The state exactly as sent once (non-empty); none when absent, empty or sent twice, and none beside a
  // request object or request_uri (only a verified signed state is echoed; these generated ones never verify).
  const states = all('state');
  const objectSent = ['request', 'request_uri'].some((name) => all(name).length > 1 || all(name).some((v) => v !== ''));
  expect(query.getAll('state')).toEqual(states.length === 1 && states[0] !== '' && !objectSent ? states : []);
}

describe('the frontend flow under generated requests', () => {
  let gw: PropertyGateway;
  beforeAll(async () => {
    gw = await startGateway({ clients: CLIENTS_WITH_PKCE });
  });
  afterAll(async () => {
    report('frontend', [gw]);
    expect(gw.internalErrors).toEqual([]);
    await gw.close();
  });

  it('GET /authorize: a redirect exactly when client_id and redirect_uri are registered together, with error or code, iss and the exact state; else a 400 page', async () => {
    const method = fc.oneof(
      { weight: 8, arbitrary: fc.constant('GET') },
      { weight: 1, arbitrary: fc.constant('HEAD') },
      { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
    );
    await fc.assert(
      fc.asyncProperty(method, authorizeQuery, fc.boolean(), device, randomHeaders, async (m, pairs, raw, d, extra) => {
        const headers: Record<string, string> = { ...extra };
        if (d.ip !== '') headers['x-forwarded-for'] = d.ip;
        if (d.port !== undefined) headers['x-source-port'] = d.port;
        if (d.cookie !== undefined) headers.cookie = d.cookie;
        const query = queryString(pairs, raw);
        const answer = await gw.send({ method: m, path: `/apigateway/authorize?${query}`, headers });
        // The model reads the query as the form-urlencoded rules say (raw '%xx' and '+' decoded once).
        expectAuthorizeAnswer(m, [...new URLSearchParams(query)], answer);
      }),
      { numRuns: 900 },
    );
  });

  it('GET /consent with generated queries and cookies but no pending request: a 400 page, never a redirect', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('interaction', 'csrf', 'decision', 'x'), nastyText), { maxLength: 3 }),
        fc.option(
          device.map((d) => d.cookie),
          { nil: undefined },
        ),
        fc.constantFrom('GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'),
        async (pairs, cookie, m) => {
          const answer = await gw.send({
            method: m,
            path: `/apigateway/consent?${queryString(pairs, false)}`,
            headers: cookie ? { cookie } : {},
          });
          expectSafe(answer);
          expectFrontendHeaders(answer);
          expect(answer.headers.location).toBeUndefined();
          if (m === 'GET' || m === 'HEAD') expect(answer.status).toBe(400);
          else {
            expect(answer.status).toBe(405);
            expect(answer.headers.allow).toBe('GET, HEAD, POST');
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('POST /consent: a form the session was not served is refused (403/400/413), nothing recorded; the real form then answers with a 303, once', async () => {
    const subject = { clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION };
    type Forged = { kind: string; sent: (real: { cookie: string; interaction: string; csrf: string }) => Sent };
    const post = (headers: Record<string, string>, body: string | undefined): Sent => ({
      method: 'POST',
      path: '/apigateway/consent',
      headers,
      body,
    });
    const FORM = 'application/x-www-form-urlencoded';
    const forged: fc.Arbitrary<Forged> = fc.oneof(
      fc.tuple(nastyText, fc.constantFrom('allow', 'deny')).map(([csrf, decision]) => ({
        kind: 'csrf',
        sent: (r: { cookie: string; interaction: string; csrf: string }) =>
          post(
            { 'content-type': FORM, cookie: r.cookie },
            formOf([
              ['interaction', r.interaction],
              ['csrf', csrf === r.csrf ? `${csrf}x` : csrf],
              ['decision', decision],
            ]),
          ),
      })),
      fc.tuple(nastyText, fc.constantFrom('allow', 'deny')).map(([interaction, decision]) => ({
        kind: 'interaction',
        sent: (r: { cookie: string; interaction: string; csrf: string }) =>
          post(
            { 'content-type': FORM, cookie: r.cookie },
            formOf([
              ['interaction', `${interaction}x`],
              ['csrf', r.csrf],
              ['decision', decision],
            ]),
          ),
      })),
      fc
        .tuple(
          fc.option(
            device.map((d) => d.cookie ?? ''),
            { nil: undefined },
          ),
          fc.constantFrom('allow', 'deny'),
        )
        .map(([cookie, decision]) => ({
          kind: 'cookie',
          sent: (r: { cookie: string; interaction: string; csrf: string }) =>
            post(
              { 'content-type': FORM, ...(cookie ? { cookie } : {}) },
              formOf([
                ['interaction', r.interaction],
                ['csrf', r.csrf],
                ['decision', decision],
              ]),
            ),
        })),
      fc.oneof(nastyText, fc.constantFrom('ALLOW', 'yes', 'allow ', '')).map((decision) => ({
        kind: 'decision',
        sent: (r: { cookie: string; interaction: string; csrf: string }) =>
          post(
            { 'content-type': FORM, cookie: r.cookie },
            formOf([
              ['interaction', r.interaction],
              ['csrf', r.csrf],
              ['decision', decision],
            ]),
          ),
      })),
      fc.constantFrom('interaction', 'csrf', 'decision').map((name) => ({
        kind: `${name} twice`,
        sent: (r: { cookie: string; interaction: string; csrf: string }) => {
          const fields: [string, string][] = [
            ['interaction', r.interaction],
            ['csrf', r.csrf],
            ['decision', 'allow'],
          ];
          return post(
            { 'content-type': FORM, cookie: r.cookie },
            formOf([...fields, fields.find(([n]) => n === name)!]),
          );
        },
      })),
      fc.constantFrom(undefined, 'application/json', 'text/plain', 'multipart/form-data; boundary=x').map((type) => ({
        kind: `content-type ${type}`,
        sent: (r: { cookie: string; interaction: string; csrf: string }) =>
          post(
            { ...(type ? { 'content-type': type } : {}), cookie: r.cookie },
            type === 'application/json'
              ? JSON.stringify({ interaction: r.interaction, csrf: r.csrf, decision: 'allow' })
              : formOf([
                  ['interaction', r.interaction],
                  ['csrf', r.csrf],
                  ['decision', 'allow'],
                ]),
          ),
      })),
      fc.constant({
        kind: 'too large',
        sent: (r: { cookie: string; interaction: string; csrf: string }) =>
          post(
            { 'content-type': FORM, cookie: r.cookie },
            `${formOf([
              ['interaction', r.interaction],
              ['csrf', r.csrf],
              ['decision', 'allow'],
            ])}&pad=${'p'.repeat(17_000)}`,
          ),
      }),
    );

    await fc.assert(
      fc.asyncProperty(
        fc.array(forged, { maxLength: 5 }),
        fc.constantFrom('allow', 'deny'),
        fc.option(fc.string({ minLength: 1, maxLength: 10 }), { nil: undefined }),
        async (attempts, decision, state) => {
          const query = new URLSearchParams({
            response_type: 'code',
            client_id: 'app-1',
            redirect_uri: CALLBACK,
            scope: LOCATION,
          });
          if (state !== undefined) query.set('state', state);
          const started = await gw.send({
            method: 'GET',
            path: `/apigateway/authorize?${query}`,
            headers: { 'x-forwarded-for': ALICE_IP },
          });
          expect(started.status).toBe(302);
          const cookie = (started.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
          const page = await gw.send({
            method: 'GET',
            path: new URL(started.headers.location!).pathname + new URL(started.headers.location!).search,
            headers: { cookie },
          });
          expect(page.status).toBe(200);
          expectFrontendHeaders(page);
          const real = { cookie, ...consentForm(page.text) };

          for (const attempt of attempts) {
            const answer = await gw.send(attempt.sent(real));
            expectSafe(answer);
            expectFrontendHeaders(answer);
            expect(answer.headers.location, attempt.kind).toBeUndefined();
            expect([400, 403, 413]).toContain(answer.status);
            if (['csrf', 'interaction', 'cookie'].includes(attempt.kind)) expect(answer.status).toBe(403);
            expect(await gw.netauth.consent.lookup(subject)).toEqual([]);
          }

          const answer = await gw.send({
            method: 'POST',
            path: '/apigateway/consent',
            // From ALICE's phone, the line the request started on.
            headers: { 'content-type': FORM, cookie, 'x-forwarded-for': ALICE_IP },
            body: formOf([
              ['interaction', real.interaction],
              ['csrf', real.csrf],
              ['decision', decision],
            ]),
          });
          expectSafe(answer);
          expectFrontendHeaders(answer);
          expect(answer.status).toBe(303);
          const back = new URL(answer.headers.location!);
          expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
          expect(back.searchParams.get('iss')).toBe(ISSUER);
          expect(back.searchParams.getAll('state')).toEqual(state === undefined ? [] : [state]);
          if (decision === 'allow')
            expect(back.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
          else expect(back.searchParams.get('error')).toBe('access_denied');
          const records = await gw.netauth.consent.lookup(subject);
          expect(records.map((r) => r.status)).toEqual([decision === 'allow' ? 'granted' : 'denied']);

          // Answered once: the same form again is refused.
          const again = await gw.send({
            method: 'POST',
            path: '/apigateway/consent',
            headers: { 'content-type': FORM, cookie, 'x-forwarded-for': ALICE_IP },
            body: formOf([
              ['interaction', real.interaction],
              ['csrf', real.csrf],
              ['decision', 'allow'],
            ]),
          });
          expect(again.status).toBe(403);
          await gw.netauth.consent.revoke(subject);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('keeps serving: after everything above, a device gets a code and the code a token', async () => {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'app-1',
      redirect_uri: CALLBACK,
      scope: SIM_SWAP,
      state: 'end',
    });
    const answer = await gw.send({
      method: 'GET',
      path: `/apigateway/authorize?${query}`,
      headers: { 'x-forwarded-for': ALICE_IP },
    });
    expect(answer.status).toBe(302);
    const code = new URL(answer.headers.location!).searchParams.get('code')!;
    const token = await gw.send({
      method: 'POST',
      path: '/apigateway/token',
      headers: { authorization: APP1_AUTH, 'content-type': 'application/x-www-form-urlencoded' },
      body: formOf([
        ['grant_type', 'authorization_code'],
        ['code', code],
        ['redirect_uri', CALLBACK],
      ]),
    });
    expect(token.status, token.text).toBe(200);
  });
});
