import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import bytes from 'bytes';
import { OAuthError } from '../../errors.js';

/**
 * Form parameters of a POST endpoint, read by docs/protocol.md's wire rules: a parameter sent twice is
 * invalid_request, an empty value counts as absent, unknown parameters are ignored.
 */
export class FormParams {
  constructor(private readonly body: Record<string, unknown>) {}

  get(name: string): string | undefined {
    if (!Object.prototype.hasOwnProperty.call(this.body, name)) return undefined;
    const value = this.body[name];
    if (Array.isArray(value)) throw new OAuthError('invalid_request', `${name} must not be sent more than once`);
    if (typeof value !== 'string' || value === '') return undefined;
    return value;
  }

  require(name: string): string {
    const value = this.get(name);
    if (value === undefined) throw new OAuthError('invalid_request', `${name} is required`);
    return value;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }
}

const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * Most parameters one request may carry, in its query or its form body. No endpoint reads more than about a
 * dozen; the limit bounds the work of reading a request whatever it holds (a 16 KB request line is ~8,000
 * parameters). Past it the request is a bad one: 400 invalid_request (a body over the size limit stays 413).
 */
export const MAX_PARAMETERS = 100;

function tooManyParameters(): OAuthError {
  return new OAuthError('invalid_request', `more than ${MAX_PARAMETERS} parameters`);
}

/** The form type, alone or with a UTF-8 charset: the bodies the direct path reads. */
const UTF8_FORM = /^application\/x-www-form-urlencoded *(?:; *charset="?utf-8"? *)?$/i;

function unreadable(): OAuthError {
  return new OAuthError('invalid_request', 'request body could not be read');
}

/**
 * A form-encoded component (RFC 6749 Appendix B, HTML's urlencoded): `+` is a space, then percent-decoding.
 * Undefined when its escapes are not valid UTF-8.
 */
export function formDecode(value: string): string | undefined {
  // Most components have nothing to decode.
  if (!value.includes('%') && !value.includes('+')) return value;
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** A body component as body-parser (qs) decodes it for UTF-8: one whose escapes are not valid UTF-8 is kept as it came, `+` a space. */
function decodeComponent(text: string): string {
  return formDecode(text) ?? text.replace(/\+/g, ' ');
}

/**
 * An `application/x-www-form-urlencoded` body by the values body-parser gives with `extended: false`: one step per
 * character, a repeated name becomes an array (which FormParams refuses), names are taken as they are (qs reads
 * `[name]` as `name`; no endpoint reads such a name either way), more than MAX_PARAMETERS `&`-separated parts is
 * invalid_request.
 */
export function parseFormBody(text: string): Record<string, string | string[]> {
  const values: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text; // iconv-lite drops a BOM
  if (body === '') return values;
  let count = 0;
  for (let start = 0; start <= body.length; ) {
    if (++count > MAX_PARAMETERS) throw tooManyParameters();
    let end = body.indexOf('&', start);
    if (end < 0) end = body.length;
    if (end > start) {
      const equals = body.indexOf('=', start);
      const split = equals >= 0 && equals < end;
      const name = decodeComponent(body.slice(start, split ? equals : end));
      const value = split ? decodeComponent(body.slice(equals + 1, end)) : '';
      if (name !== '') {
        const previous = values[name];
        if (previous === undefined) values[name] = value;
        else if (Array.isArray(previous)) previous.push(value);
        else values[name] = [previous, value];
      }
    }
    start = end + 1;
  }
  return values;
}

/**
 * Reads the body of a request whose Content-Length is known and within the limit, as text. Two listeners and no
 * more: if the connection goes before the body is complete, `end` never comes, and no one is left to answer.
 */
function readBody(req: Request, length: number, done: (error: OAuthError | undefined, text?: string) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  const onData = (chunk: Buffer): void => {
    received += chunk.length;
    chunks.push(chunk);
  };
  const onEnd = (): void => {
    if (received !== length) done(unreadable());
    else done(undefined, (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)).toString('utf8'));
  };
  req.on('data', onData);
  req.on('end', onEnd);
}

/**
 * Forms read directly, kept beside their request rather than at `req.body`. Express gives every request a
 * hidden class of its own (it sets the request's prototype), so each property added to a request costs V8 a
 * copy of that class: `req.body` and body-parser's `req._body` flag cost about 6% of a whole backend flow's
 * instructions (valgrind). The endpoints read their form through `formParams`; what body-parser reads (the
 * general path below, or a parser the application mounted before the router) is still taken from `req.body`.
 */
const directBodies = new WeakMap<Request, Record<string, string | string[]>>();

/**
 * Accepts `application/x-www-form-urlencoded` only, up to `limit`; everything else is invalid_request. The common
 * case (a UTF-8 form with a Content-Length within the limit, not compressed, not read before) is read here directly:
 * body-parser's general path (charsets, chunked and compressed bodies, streams, the 413 after draining an oversized
 * body) costs more than the rest of a token request. Everything else goes through body-parser as before.
 */
export function formBody(limit: string | number): RequestHandler {
  // Read by the `bytes` package, as body-parser reads the same limit, so the two paths agree on every size.
  const maxBytes = bytes.parse(limit) ?? NaN;
  // extended:false keeps values flat (no nested objects) and turns repeats into arrays, which FormParams refuses.
  const parse = express.urlencoded({ extended: false, limit, parameterLimit: MAX_PARAMETERS, type: FORM_TYPE });
  // body-parser passes decompression failures (`Content-Encoding: gzip`, `br` or `deflate` on a body that is
  // not) on as 400s without a `type`: they are the client's too, never a 500.
  const general: RequestHandler = (req, res, next) => {
    parse(req, res, (error?: unknown) => {
      if (error === undefined) {
        next();
        return;
      }
      const status = error !== null && typeof error === 'object' ? (error as BodyParserError).status : undefined;
      const clientError = typeof status === 'number' && status >= 400 && status < 500;
      next(bodyError(error) ?? (clientError ? unreadable() : error));
    });
  };
  return (req, res, next) => {
    // Read already (a second formBody on the same request): the stream is spent, and the form is kept.
    if (directBodies.has(req)) {
      next();
      return;
    }
    const { headers } = req;
    const type = headers['content-type'];
    const declared = headers['content-length'];
    const direct =
      type !== undefined &&
      (type === FORM_TYPE || UTF8_FORM.test(type)) &&
      declared !== undefined &&
      /^\d{1,15}$/.test(declared) &&
      Number(declared) <= maxBytes &&
      headers['content-encoding'] === undefined &&
      headers['transfer-encoding'] === undefined &&
      !(req as { _body?: unknown })._body &&
      !req.readableEnded;
    if (!direct) {
      if (!req.is(FORM_TYPE)) {
        next(new OAuthError('invalid_request', `Content-Type must be ${FORM_TYPE}`));
        return;
      }
      general(req, res, next);
      return;
    }
    const settle = (error: OAuthError | undefined, text?: string): void => {
      if (error !== undefined) {
        next(error);
        return;
      }
      try {
        directBodies.set(req, parseFormBody(text ?? ''));
      } catch (thrown) {
        next(thrown);
        return;
      }
      next();
    };
    const length = Number(declared);
    if (length === 0) settle(undefined, '');
    else readBody(req, length, settle);
  };
}

/** The form `formBody` read: its own reading, or body-parser's (`req.body`). */
export function formBodyOf(req: Request): unknown {
  return directBodies.get(req) ?? req.body;
}

export function formParams(req: Request): FormParams {
  const body = formBodyOf(req);
  return new FormParams(body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {});
}

/**
 * Query parameters by the same wire rules. Read from the raw URL rather than `req.query`, so the app's
 * `query parser` setting (e.g. qs with nested objects) cannot change what the endpoint sees.
 */
export function queryParams(req: Request): FormParams {
  // Only the query is parsed: `new URL(originalUrl, base)` threw on absolute-form targets with an authority
  // WHATWG refuses (`GET http://x:99999/authorize?...`), a 500 for bad input. URLSearchParams never throws.
  const url = req.originalUrl;
  const start = url.indexOf('?');
  const end = url.indexOf('#', start);
  const search = new URLSearchParams(start < 0 ? '' : url.slice(start + 1, end < 0 ? undefined : end));
  const values: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  let count = 0;
  for (const [name, value] of search) {
    if (++count > MAX_PARAMETERS) throw tooManyParameters();
    // A repeat is only ever refused (FormParams.get), so it is appended in place: one step per parameter.
    const previous = values[name];
    if (previous === undefined) values[name] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else values[name] = [previous, value];
  }
  return new FormParams(values);
}

interface BodyParserError {
  type?: unknown;
  status?: unknown;
  expose?: unknown;
}

/** Turns body-parser's errors into OAuth errors: 413 for too large, 400 for anything else about the body (too many parameters included). */
export function bodyError(error: unknown): OAuthError | undefined {
  if (error === null || typeof error !== 'object' || !('type' in error)) return undefined;
  const { type, status } = error as BodyParserError;
  if (typeof type !== 'string' || typeof status !== 'number') return undefined;
  if (type === 'entity.too.large') return new OAuthError('invalid_request', 'request body too large', { status: 413 });
  if (type === 'parameters.too.many') return tooManyParameters();
  if (status >= 400 && status < 500) return new OAuthError('invalid_request', 'request body could not be read');
  return undefined;
}

export type AsyncHandler = (req: Request, res: Response) => Promise<void>;

/** Runs an async endpoint action and hands any failure to the router's one error renderer. */
export function action(handler: AsyncHandler): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    handler(req, res).catch(next);
  };
}
