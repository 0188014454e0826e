import http, { type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import fc from 'fast-check';
import { expect } from 'vitest';
import { listen } from '../helpers/listen.js';
import { createTestGateway, type TestGateway } from '../helpers/gateway.js';
import type { NetAuthOptions } from '../../lib/index.js';

/**
 * Shared ground of the generated-input suite (test/properties): a gateway on a real listening socket,
 * a raw HTTP client that sends exactly what a generator made (any method, header or body), a request
 * counter per file, and the assertions every answer must satisfy whatever was sent.
 */

export interface Sent {
  method: string;
  /** Path and query, sent as is (already percent-encoded where it must be). */
  path: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** Send the body with `Transfer-Encoding: chunked` (no Content-Length). */
  chunked?: boolean;
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** The error codes each kind of endpoint may answer with (RFC 6749 §4.1.2.1, §5.2, RFC 6750 §3.1, CIBA §13, §11). */
export const BC_AUTHORIZE_ERRORS = [
  'invalid_request',
  'invalid_client',
  'invalid_scope',
  'unknown_user_id',
  'unauthorized_client',
  'access_denied',
  'invalid_request_object',
];
export const TOKEN_ERRORS = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'authorization_pending',
  'slow_down',
  'expired_token',
  'access_denied',
];
export const AUTHORIZE_ERRORS = [
  'invalid_request',
  'unauthorized_client',
  'access_denied',
  'unsupported_response_type',
  'invalid_scope',
  'server_error',
  'temporarily_unavailable',
  'consent_required',
  'login_required',
  'invalid_request_object',
  'request_uri_not_supported',
];

/** RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E. */
export const DESCRIPTION_CHARSET = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/;

export interface PropertyGateway extends TestGateway {
  url: string;
  send(request: Sent): Promise<Answer>;
  /** A request on a connection of its own, written byte for byte (for what node's client refuses to send). */
  raw(bytes: string | Buffer): Promise<Answer | 'closed'>;
  /** Requests sent so far. */
  readonly tried: number;
  /** Everything the router reported through onError: must stay empty. */
  internalErrors: unknown[];
  close(): Promise<void>;
}

/**
 * The test gateway (test/helpers/gateway.ts) on a loopback port, with onError captured. Rate limits are
 * off: thousands of generated requests (many with wrong credentials) from one address would otherwise
 * be answered 429 by design; test/ops covers the limits.
 */
export async function startGateway(overrides: Partial<NetAuthOptions> = {}): Promise<PropertyGateway> {
  const internalErrors: unknown[] = [];
  const gw = createTestGateway({ onError: (error) => internalErrors.push(error), rateLimits: false, ...overrides });
  const server = await listen(gw.app);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const { port } = new URL(server.url);
  let tried = 0;

  const send = (request: Sent): Promise<Answer> =>
    new Promise((resolve, reject) => {
      tried++;
      const headers: Record<string, string | string[]> = { ...request.headers };
      const body = request.body === undefined ? undefined : Buffer.from(request.body);
      // Framing set explicitly: node's client sends a GET/DELETE body unframed unless told.
      if (body !== undefined) {
        if (request.chunked) headers['transfer-encoding'] = 'chunked';
        else headers['content-length'] = String(body.length);
      }
      const req = http.request(
        { host: '127.0.0.1', port: Number(port), method: request.method, path: request.path, headers, agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (body !== undefined) req.end(body);
      else req.end();
    });

  const raw = (bytes: string | Buffer): Promise<Answer | 'closed'> =>
    new Promise((resolve, reject) => {
      tried++;
      const socket = net.connect(Number(port), '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('latin1');
        const head = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
        if (!head) {
          resolve('closed');
          return;
        }
        const headers: IncomingHttpHeaders = {};
        for (const line of head[2]!.split('\r\n')) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        resolve({ status: Number(head[1]), headers, text: head[3]! });
      });
      socket.write(bytes); // not end(): a half-closed connection may be dropped before an async answer
    });

  return {
    ...gw,
    url: server.url,
    send,
    raw,
    get tried() {
      return tried;
    },
    internalErrors,
    close: async () => {
      agent.destroy();
      await server.close();
      await gw.netauth.close();
    },
  };
}

/** Prints the file's count once, as CI shows it. */
export function report(name: string, gateways: readonly { tried: number }[], extra = 0): void {
  const total = gateways.reduce((n, g) => n + g.tried, extra);
  console.log(`properties (${name}): ${total} requests tried`);
}

/** Nothing of the implementation shows: no stack frame, no file path, no exception name. */
export function expectNoLeak(answer: Answer): void {
  const text = answer.text;
  expect(text).not.toMatch(/\n\s+at\s/);
  expect(text).not.toMatch(/\(?(?:file:\/\/)?\/[^\s"]*\.(?:ts|js|mjs|cjs):\d+/);
  expect(text).not.toContain('node_modules');
  expect(text).not.toContain(process.cwd());
  expect(text).not.toMatch(/\b(?:Type|Range|Syntax|Reference|URI)Error\b/);
}

/** Every answer of every endpoint: never a 5xx, nothing leaked. */
export function expectSafe(answer: Answer): void {
  expect(answer.status, answer.text).toBeLessThan(500);
  expect(answer.status).toBeGreaterThanOrEqual(200);
  expectNoLeak(answer);
}

/** An RFC 6749 §5.2 error body: JSON, `error` from the endpoint's known codes, optional ASCII `error_description`, nothing else. */
export function expectJsonError(
  answer: Answer,
  codes: readonly string[],
): { error: string; error_description?: string } {
  expect(answer.headers['content-type']).toMatch(/^application\/json\b/);
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  expect(
    Object.keys(body).every((k) => k === 'error' || k === 'error_description'),
    answer.text,
  ).toBe(true);
  expect(codes, answer.text).toContain(body.error);
  if (body.error_description !== undefined) {
    expect(typeof body.error_description).toBe('string');
    expect(body.error_description, answer.text).toMatch(DESCRIPTION_CHARSET);
  }
  return body as { error: string; error_description?: string };
}

/** bc-authorize and token: every answer is no-store, and either its success shape or an error of the endpoint. */
export function expectJsonEndpointAnswer(
  answer: Answer,
  codes: readonly string[],
  success: (body: Record<string, unknown>) => void,
  /** The request may have carried a client assertion: its 401 has no Basic challenge (RFC 6749 §5.2 asks for one after the Authorization header). */
  assertionSent = false,
): void {
  expectSafe(answer);
  expect(answer.headers['cache-control']).toBe('no-store');
  expect(answer.headers.pragma).toBe('no-cache');
  if (answer.status === 200) {
    expect(answer.headers['content-type']).toMatch(/^application\/json\b/);
    success(JSON.parse(answer.text) as Record<string, unknown>);
    return;
  }
  expect([400, 401, 403, 405, 413]).toContain(answer.status);
  const body = expectJsonError(answer, codes);
  if (answer.status === 401) {
    expect(body.error).toBe('invalid_client');
    const challenge = answer.headers['www-authenticate'];
    if (challenge !== undefined || !assertionSent) expect(challenge).toMatch(/^Basic realm="[^"]*"$/);
  }
  if (answer.status === 405) expect(answer.headers.allow).toBe('POST');
  if (answer.status === 413 || answer.status === 405) expect(body.error).toBe('invalid_request');
  if (body.error === 'invalid_client') expect(answer.status).toBe(401);
}

/** Headers of every frontend-flow answer (authorize, consent page): never framed, cached or leaked as a Referer. */
export function expectFrontendHeaders(answer: Answer): void {
  expect(answer.headers['cache-control']).toBe('no-store');
  expect(answer.headers['x-frame-options']).toBe('DENY');
  expect(answer.headers['referrer-policy']).toBe('no-referrer');
  expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
}

// ---------------------------------------------------------------------------------------------------------------
// Generators shared by the endpoint files.

/** Methods node's parser knows (others never reach Express: node answers 400 itself). */
export const METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'PROPFIND',
  'LOCK',
  'PURGE',
  'SEARCH',
  'TRACE',
  'QUERY',
].filter((m) => http.METHODS.includes(m));

/** Text with what hurts parsers: unicode (astral, combining, RTL, NUL), control characters, separators, percent signs. */
export const nastyText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({
    unit: fc.constantFrom(
      '\0',
      '\t',
      '\n',
      '\r',
      '\x7f',
      '\u2028',
      '\u202e',
      '\ufeff',
      '\u0301',
      '%',
      '+',
      '&',
      '=',
      ';',
      ':',
      '#',
      '"',
      '\\',
      ' ',
      '\ud83d\ude00',
      'é',
      '٣',
    ),
    maxLength: 12,
  }),
  fc.constantFrom(
    '',
    ' ',
    '%',
    '%zz',
    '%00',
    '%C3%28',
    '%E2%82',
    '+',
    '[]',
    '{}',
    '__proto__',
    'constructor',
    'a'.repeat(2000),
  ),
);

/** A valid UTF-8 text that `encodeURIComponent` accepts (no lone surrogates). */
export const wellFormed = (maxLength = 40): fc.Arbitrary<string> => fc.string({ unit: 'grapheme', maxLength });

/** Form-encodes pairs in order, repeats kept; some values are sent raw (not encoded) to hit the decoder. */
export function formOf(pairs: readonly (readonly [string, string, boolean?])[]): string {
  return pairs.map(([k, v, raw]) => `${encodeURIComponent(k)}=${raw ? v : encodeURIComponent(v)}`).join('&');
}

/** Header values node's client can send (no CR, LF or NUL; latin1), from garbage to near-valid. */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
  fc.string({ maxLength: 60 }),
  fc.constantFrom(
    '',
    ' ',
    'Basic',
    'Basic ',
    'Basic ===',
    'Basic Og==',
    'Bearer',
    'Bearer ',
    'Negotiate abc',
    'basic  YTpi',
    'Basic YTpi Og==',
    'Basic\tYTpi',
    'Basic %',
    'Bearer a b',
    'x'.repeat(4000),
  ),
  fc.base64String({ maxLength: 64 }).map((b) => `Basic ${b}`),
  fc.base64String({ maxLength: 64 }).map((b) => `Bearer ${b}`),
);

/** Headers the generators set on purpose, or that change the framing itself (node answers those before Express). */
const FRAMING = new Set([
  'authorization',
  'content-type',
  'content-encoding',
  'content-length',
  'transfer-encoding',
  'host',
  'connection',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'keep-alive',
]);

/** Extra request headers, as random as node's client allows. */
export const randomHeaders: fc.Arbitrary<Record<string, string>> = fc.dictionary(
  fc
    .oneof(
      fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
      fc.constantFrom(
        'x-forwarded-for',
        'x-forwarded-proto',
        'x-source-port',
        'accept',
        'accept-encoding',
        'origin',
        'referer',
        'cookie',
        'forwarded',
        'x-http-method-override',
        'expect-ct',
      ),
    )
    .filter((name) => !FRAMING.has(name)),
  headerValue,
  { maxKeys: 4 },
);

/** Content types for POST bodies: the right one, variants of it, and wrong ones. */
export const contentType: fc.Arbitrary<string | undefined> = fc.constantFrom(
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=utf-8',
  'Application/X-WWW-Form-URLEncoded',
  'application/x-www-form-urlencoded; charset=iso-8859-1',
  'application/x-www-form-urlencoded; charset=koi8-r',
  'application/x-www-form-urlencoded; charset',
  'application/x-www-form-urlencoded;;',
  'application/json',
  'multipart/form-data; boundary=x',
  'text/plain',
  'application/x-www-form-urlencodedx',
  '*/*',
  '',
  undefined,
);
