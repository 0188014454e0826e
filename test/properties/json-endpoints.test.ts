import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formDecode } from '../../lib/gateway/http/form.js';
import { APP1, APP2, CIBA, SIM_SWAP, basic } from '../helpers/gateway.js';
import {
  BC_AUTHORIZE_ERRORS,
  METHODS,
  TOKEN_ERRORS,
  contentType,
  expectJsonEndpointAnswer,
  expectNoLeak,
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
 * POST /bc-authorize and POST /token (both grants) under generated requests (docs/protocol.md, wire rules):
 * any method, content type, encoding, body and Authorization header. Always: no 5xx, no stack trace,
 * `Cache-Control: no-store` + `Pragma: no-cache`, the endpoint's success shape or an RFC 6749 §5.2 JSON
 * error with one of its codes; 413 exactly over the body limit; 400 past 100 parameters; and afterwards a
 * valid flow still works.
 */

const LIMIT = 16 * 1024; // the default bodyLimit, '16kb'
const ENDPOINTS = [
  { path: '/apigateway/bc-authorize', codes: BC_AUTHORIZE_ERRORS },
  { path: '/apigateway/token', codes: TOKEN_ERRORS },
] as const;
const FORM = 'application/x-www-form-urlencoded';
const CODE_ONLY = basic('code-only', 'code-secret');

const PARAMETERS = [
  'grant_type',
  'auth_req_id',
  'code',
  'redirect_uri',
  'code_verifier',
  'login_hint',
  'scope',
  'client_id',
  'client_secret',
  'client_assertion',
  'client_assertion_type',
  'login_hint_token',
  'id_token_hint',
  'request',
  'binding_message',
  'requested_expiry',
];
const GOOD_VALUES = [
  CIBA,
  'authorization_code',
  'refresh_token',
  'password',
  SIM_SWAP,
  'dpv:FraudPreventionAndDetection#device-location',
  'dpv:Marketing#device-location',
  'openid dpv:FraudPreventionAndDetection sim-swap',
  'tel:+34600000001',
  'tel:+34600000002',
  'tel:+34699999999',
  'ipport:10.20.0.1',
  'ipport:[2001:db8::1]:443',
  'ipport:100.64.0.1:1500',
  'operatortoken:abc',
  'app-1',
  'app-2',
  'https://app.example/callback',
];

const value = fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...GOOD_VALUES) }, { weight: 3, arbitrary: nastyText });
const pairs = fc.array(
  fc.tuple(
    fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...PARAMETERS) }, { weight: 1, arbitrary: nastyText }),
    value,
    fc.boolean(),
  ),
  {
    maxLength: 8,
  },
);
const body: fc.Arbitrary<string | Buffer | undefined> = fc.oneof(
  { weight: 6, arbitrary: pairs.map((p) => formOf(p)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.json({ maxDepth: 2 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      undefined,
      '',
      '&',
      '=',
      '&&==',
      'a',
      '%',
      '%%%',
      '\uFEFFscope=x',
      'scope=%FF%FE',
      'a[b]=c&a[]=d',
      '__proto__[x]=1&constructor=2',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: LIMIT - 64, max: LIMIT + 64 }).map((n) => `scope=${'s'.repeat(n - 6)}`) },
);
const authorization = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(APP1, APP2, CODE_ONLY) },
  { weight: 2, arbitrary: headerValue },
  {
    weight: 1,
    arbitrary: fc
      .tuple(nastyText, nastyText)
      .filter(([a, b]) => isEncodable(a) && isEncodable(b))
      .map(([a, b]) => basic(a, b)),
  },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const contentEncoding = fc.constantFrom(
  undefined,
  undefined,
  undefined,
  'identity',
  'gzip',
  'deflate',
  'br',
  'compress',
  'x-unknown',
  'gzip, gzip',
);

function isEncodable(text: string): boolean {
  try {
    encodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** A request as a hostile or broken client would send it. */
const randomRequest: fc.Arbitrary<Sent & { endpoint: (typeof ENDPOINTS)[number] }> = fc
  .record({
    endpoint: fc.constantFrom(...ENDPOINTS),
    method: fc.oneof(
      { weight: 5, arbitrary: fc.constant('POST') },
      { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
    ),
    pathSuffix: fc.constantFrom('', '', '', '/', '?x=1', '?grant_type=x&grant_type=y', '?%zz'),
    upper: fc.boolean(),
    authorization,
    contentType,
    contentEncoding,
    headers: randomHeaders,
    body,
    chunked: fc.boolean(),
  })
  .map((r) => {
    const headers: Record<string, string> = { ...r.headers };
    if (r.authorization !== undefined) headers.authorization = r.authorization;
    if (r.contentType !== undefined) headers['content-type'] = r.contentType;
    let payload = r.body;
    if (r.contentEncoding !== undefined) {
      headers['content-encoding'] = r.contentEncoding;
      // A real gzip stream half of the time, garbage the other half.
      if (r.contentEncoding === 'gzip' && typeof payload === 'string' && payload.length % 2 === 0)
        payload = gzipSync(payload);
    }
    const path = r.endpoint.path + r.pathSuffix;
    return {
      endpoint: r.endpoint,
      method: r.method,
      path: r.upper ? path.toUpperCase().replace('/APIGATEWAY', '/apigateway') : path,
      headers,
      body: payload,
      chunked: r.chunked,
    };
  });

/** The success bodies of the two endpoints. */
function successShape(path: string): (body: Record<string, unknown>) => void {
  return (b) => {
    if (path.includes('bc-authorize')) {
      expect(Object.keys(b).sort()).toEqual(['auth_req_id', 'expires_in', 'interval']);
      expect(b.auth_req_id).toMatch(/^[A-Za-z0-9._-]{22,}$/);
      expect(b.expires_in).toBe(120);
      expect(b.interval).toBe(2);
    } else {
      expect(b).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
      expect(b.access_token).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
      expect(typeof b.scope).toBe('string');
    }
  };
}

/** Whether the body, decompressed if it can be, mentions a client assertion parameter. */
function mayCarryAssertion(sent: Sent): boolean {
  if (sent.body === undefined) return false;
  let bytes = typeof sent.body === 'string' ? Buffer.from(sent.body) : sent.body;
  try {
    bytes = gunzipSync(bytes);
  } catch {
    /* not gzip */
  }
  return bytes.toString('latin1').includes('client_assertion');
}

function expectAnswer(sent: Sent, answer: Answer, codes: readonly string[]): void {
  if (sent.method === 'HEAD') {
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('POST');
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.text).toBe('');
    return;
  }
  expectJsonEndpointAnswer(answer, codes, successShape(sent.path.toLowerCase()), mayCarryAssertion(sent));
  if (sent.method !== 'POST') expect(answer.status).toBe(405);
}

describe('bc-authorize and token under generated requests', () => {
  let gw: PropertyGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    report('json-endpoints', [gw]);
    await gw.close();
  });

  it('random requests: never a 5xx or a stack trace; always no-store and the endpoint’s JSON answer shape', async () => {
    await fc.assert(
      fc.asyncProperty(randomRequest, async (sent) => {
        expectAnswer(sent, await gw.send(sent), sent.endpoint.codes);
      }),
      { numRuns: 900 },
    );
  });

  it('authenticated, well-framed requests with generated parameter values reach every check, and every error is one of the endpoint’s', async () => {
    const field = (name: string, good: readonly string[]) =>
      fc
        .option(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...good) }, { weight: 2, arbitrary: nastyText }), {
          nil: undefined,
        })
        .map((v) => [name, v] as const);
    const bc = fc.tuple(
      field('login_hint', [
        'tel:+34600000001',
        'tel:+34600000002',
        'tel:+34699999999',
        'ipport:10.20.0.1',
        'ipport:100.64.0.1:1500',
        'operatortoken:x',
        'dpv:x',
        'tel:34',
      ]),
      field('scope', [
        SIM_SWAP,
        'dpv:Marketing#device-location',
        'dpv:FraudPreventionAndDetection device-location',
        'dpv:1x#y',
        'dpv:A#b dpv:C#d',
        'openid',
      ]),
      field('client_id', ['app-1', 'app-2']),
      field('binding_message', ['hello']),
    );
    const token = fc.tuple(
      field('grant_type', [CIBA, 'authorization_code', 'refresh_token', 'urn:x']),
      field('auth_req_id', ['x', 'a'.repeat(43)]),
      field('code', ['x', 'a'.repeat(43)]),
      field('redirect_uri', ['https://app.example/callback']),
      field('code_verifier', ['a'.repeat(43)]),
    );
    const request = fc.oneof(
      fc.tuple(fc.constant(ENDPOINTS[0]), bc, fc.constantFrom(APP1, APP2, CODE_ONLY)),
      fc.tuple(fc.constant(ENDPOINTS[1]), token, fc.constantFrom(APP1, APP2, CODE_ONLY)),
    );
    await fc.assert(
      fc.asyncProperty(request, async ([endpoint, fields, auth]) => {
        const form = formOf(fields.filter((f): f is readonly [string, string] => f[1] !== undefined));
        const sent: Sent = {
          method: 'POST',
          path: endpoint.path,
          headers: { authorization: auth, 'content-type': FORM },
          body: form,
        };
        expectAnswer(sent, await gw.send(sent), endpoint.codes);
      }),
      { numRuns: 600 },
    );
  });

  it('another method is 405 with Allow: POST, still JSON and no-store', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        fc.constantFrom(...METHODS.filter((m) => m !== 'POST')),
        randomHeaders,
        async (endpoint, method, headers) => {
          const sent = { method, path: endpoint.path, headers };
          const answer = await gw.send(sent);
          expect(answer.status).toBe(405);
          expectAnswer(sent, answer, ['invalid_request']);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a valid request with a content type other than the form type is 400 invalid_request', async () => {
    const wrong = fc.constantFrom(
      undefined,
      'application/json',
      'text/plain',
      'multipart/form-data; boundary=x',
      'application/x-www-form-urlencodedx',
      'application/xml',
      'form',
      '*/*',
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), wrong, async (endpoint, type) => {
        const form = endpoint.path.endsWith('token')
          ? formOf([
              ['grant_type', CIBA],
              ['auth_req_id', 'x'],
            ])
          : formOf([
              ['login_hint', 'tel:+34600000001'],
              ['scope', SIM_SWAP],
            ]);
        const sent: Sent = {
          method: 'POST',
          path: endpoint.path,
          headers: { authorization: APP1, ...(type === undefined ? {} : { 'content-type': type }) },
          body: form,
        };
        const answer = await gw.send(sent);
        expectAnswer(sent, answer, endpoint.codes);
        expect(answer.status).toBe(400);
        expect(JSON.parse(answer.text).error).toBe('invalid_request');
      }),
      { numRuns: 60 },
    );
  });

  it('body size: 413 invalid_request exactly when the body (after content decoding) is over the limit, with or without Content-Length', async () => {
    const size = fc.oneof(
      fc.integer({ min: LIMIT - 200, max: LIMIT + 200 }),
      fc.constantFrom(LIMIT, LIMIT + 1, 4 * LIMIT, 16 * LIMIT),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        size,
        fc.boolean(),
        fc.boolean(),
        async (endpoint, n, chunked, gzip) => {
          const plain = `scope=${'s'.repeat(n - 6)}`;
          const sent: Sent = {
            method: 'POST',
            path: endpoint.path,
            headers: { authorization: APP1, 'content-type': FORM, ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
            body: gzip ? gzipSync(plain) : plain,
            chunked,
          };
          const answer = await gw.send(sent);
          expectAnswer(sent, answer, endpoint.codes);
          if (n > LIMIT) {
            expect(answer.status).toBe(413);
            expect(JSON.parse(answer.text).error).toBe('invalid_request');
          } else {
            expect(answer.status).not.toBe(413);
          }
        },
      ),
      { numRuns: 120 },
    );
  });

  it('more than 100 parameters is 400 invalid_request (a bad request, not a body too large); up to 100 is read', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), fc.integer({ min: 90, max: 110 }), async (endpoint, count) => {
        const form = Array.from({ length: count }, (_, i) => `p${i}=1`).join('&');
        const sent: Sent = {
          method: 'POST',
          path: endpoint.path,
          headers: { authorization: APP1, 'content-type': FORM },
          body: form,
        };
        const answer = await gw.send(sent);
        expectAnswer(sent, answer, endpoint.codes);
        expect(answer.status).not.toBe(413);
        const tooMany =
          answer.status === 400 && JSON.parse(answer.text).error_description === 'more than 100 parameters';
        expect(tooMany).toBe(count > 100);
      }),
      { numRuns: 40 },
    );
  });

  it('a parameter sent twice is invalid_request, and does not use up the auth_req_id it names', async () => {
    const bcDup = fc.tuple(
      fc.constantFrom('login_hint', 'scope', 'client_id'),
      fc.option(nastyText, { nil: undefined }),
    );
    await fc.assert(
      fc.asyncProperty(bcDup, fc.boolean(), async ([name, other], after) => {
        const valid: [string, string][] = [
          ['login_hint', 'tel:+34600000001'],
          ['scope', SIM_SWAP],
          ['client_id', 'app-1'],
        ];
        const twice = valid.find(([n]) => n === name)!;
        const list: [string, string][] = after
          ? [...valid, [name, other ?? twice[1]]]
          : [[name, other ?? twice[1]], ...valid];
        const sent: Sent = {
          method: 'POST',
          path: '/apigateway/bc-authorize',
          headers: { authorization: APP1, 'content-type': FORM },
          body: formOf(list),
        };
        const answer = await gw.send(sent);
        expectAnswer(sent, answer, BC_AUTHORIZE_ERRORS);
        expect(answer.status).toBe(400);
        expect(JSON.parse(answer.text).error).toBe('invalid_request');
      }),
      { numRuns: 60 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('grant_type', 'auth_req_id', 'client_id'),
        fc.option(nastyText, { nil: undefined }),
        async (name, other) => {
          const started = await gw.send({
            method: 'POST',
            path: '/apigateway/bc-authorize',
            headers: { authorization: APP1, 'content-type': FORM },
            body: formOf([
              ['login_hint', 'tel:+34600000001'],
              ['scope', SIM_SWAP],
            ]),
          });
          const id = JSON.parse(started.text).auth_req_id as string;
          const valid: [string, string][] = [
            ['grant_type', CIBA],
            ['auth_req_id', id],
            ['client_id', 'app-1'],
          ];
          const sent: Sent = {
            method: 'POST',
            path: '/apigateway/token',
            headers: { authorization: APP1, 'content-type': FORM },
            body: formOf([...valid, [name, other ?? valid.find(([n]) => n === name)![1]]]),
          };
          const answer = await gw.send(sent);
          expectAnswer(sent, answer, TOKEN_ERRORS);
          expect(JSON.parse(answer.text).error).toBe('invalid_request');
          // Nothing was used up: the proper poll gets the token.
          const poll = await gw.send({ ...sent, body: formOf(valid) });
          expectAnswer(sent, poll, TOKEN_ERRORS);
          expect(poll.status).toBe(200);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('an Authorization header that names no registered client is 401 invalid_client with a Basic challenge', async () => {
    // Leaves out a header passport-http would read as a registered id's (a scheme containing `Basic`, the part of
    // the decoded credentials before a colon): failures for that id would lock it out for later requests.
    const garbage = headerValue.filter((h) => {
      const [scheme, token] = h.trim().split(' ');
      if (!scheme || !/Basic/i.test(scheme) || token === undefined) return true;
      const id = formDecode(Buffer.from(token, 'base64').toString().split(':')[0]!) ?? '';
      return !['app-1', 'app-2', 'code-only'].includes(id);
    });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), garbage, async (endpoint, header) => {
        const form = endpoint.path.endsWith('token')
          ? formOf([
              ['grant_type', CIBA],
              ['auth_req_id', 'x'],
            ])
          : formOf([
              ['login_hint', 'tel:+34600000001'],
              ['scope', SIM_SWAP],
            ]);
        const sent: Sent = {
          method: 'POST',
          path: endpoint.path,
          headers: { authorization: header, 'content-type': FORM },
          body: form,
        };
        const answer = await gw.send(sent);
        expectAnswer(sent, answer, endpoint.codes);
        expect(answer.status).toBe(401);
        expect(answer.headers['www-authenticate']).toBe('Basic realm="http://gateway.test/apigateway"');
      }),
      { numRuns: 150 },
    );
  });

  it('raw requests node’s client would not send: absolute-form targets, bare LF, obs-fold, bad Content-Length', async () => {
    const requests = fc.oneof(
      fc
        .constantFrom('http://x:99999', 'http://x@', 'http://1.2.3.256', 'foo://x', '')
        .map((authority) => ['POST', `${authority}/apigateway/token`, 'Content-Length: 0'] as const),
      fc
        .constantFrom(
          'Content-Length: 5\r\nContent-Length: 6',
          'Content-Length: -1',
          'Content-Length: 1e3',
          'Transfer-Encoding: chunked\r\nContent-Length: 3',
          'Authorization: Basic\r\n YTpi',
        )
        .map((h) => ['POST', '/apigateway/bc-authorize', h] as const),
    );
    await fc.assert(
      fc.asyncProperty(requests, async ([method, target, extra]) => {
        const answer = await gw.raw(
          `${method} ${target} HTTP/1.1\r\nHost: gateway.test\r\nConnection: close\r\nContent-Type: ${FORM}\r\n${extra}\r\n\r\n`,
        );
        if (answer === 'closed') return;
        // Node itself refuses malformed framing with a bare 400; whatever reaches the router is its answer.
        expect(answer.status).toBeLessThan(500);
        expectNoLeak({ status: answer.status, headers: answer.headers, text: answer.text });
        if (answer.headers['content-type'] !== undefined) expect(answer.headers['cache-control']).toBe('no-store');
      }),
      { numRuns: 30 },
    );
  });

  it('keeps serving: a complete backend flow succeeds after everything above, with nothing reported to onError', async () => {
    const form = { authorization: APP1, 'content-type': FORM };
    const started = await gw.send({
      method: 'POST',
      path: '/apigateway/bc-authorize',
      headers: form,
      body: formOf([
        ['login_hint', 'tel:+34600000001'],
        ['scope', SIM_SWAP],
      ]),
    });
    expect(started.status).toBe(200);
    const token = await gw.send({
      method: 'POST',
      path: '/apigateway/token',
      headers: form,
      body: formOf([
        ['grant_type', CIBA],
        ['auth_req_id', JSON.parse(started.text).auth_req_id],
      ]),
    });
    expect(token.status).toBe(200);
    const api = await gw.send({
      method: 'POST',
      path: '/sim-swap/check',
      headers: { authorization: `Bearer ${JSON.parse(token.text).access_token}` },
    });
    expect(api.status).toBe(200);
    expect(JSON.parse(api.text)).toMatchObject({ subscriber: 'sub-alice', clientId: 'app-1' });
    expect(gw.internalErrors).toEqual([]);
  });
});
