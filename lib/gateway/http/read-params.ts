import type { IncomingMessage } from 'node:http';
import bytes from 'bytes';
import type { RequestHandler } from 'express';
import { OAuthError } from '../../errors.js';
import { FormParams, parseForm, queryParams, tooManyParameters } from './form.js';
import { bodyTooLarge, bodyUnreadable, readBody } from './read-body.js';
import { step } from './request-context.js';
import { sha256Of } from '../../crypto.js';

const FORM_TYPE = 'application/x-www-form-urlencoded';

interface BodyParserError {
  type?: unknown;
  status?: unknown;
}

/**
 * body-parser's errors, from a parser the application runs before the router, as OAuth errors: 413 for too large,
 * 400 for anything else about the body (too many parameters).
 */
export function bodyError(error: unknown): OAuthError | undefined {
  if (error === null || typeof error !== 'object' || !('type' in error)) return undefined;
  const { type, status } = error as BodyParserError;
  if (typeof type !== 'string' || typeof status !== 'number') return undefined;
  if (type === 'entity.too.large') return bodyTooLarge();
  if (type === 'parameters.too.many') return tooManyParameters();
  if (status >= 400 && status < 500) return bodyUnreadable();
  return undefined;
}

/** Whether a request has a body at all (type-is's test): one is framed by Transfer-Encoding or Content-Length. */
export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}

/** `bodyLimit` in bytes: a number, or a size in the `bytes` package's notation (as body-parser reads it). */
export function sizeLimit(limit: string | number): number {
  const maxBytes = typeof limit === 'number' ? limit : bytes.parse(limit);
  if (maxBytes === null || !Number.isFinite(maxBytes) || maxBytes < 0) {
    throw new TypeError(`express-netauth: bodyLimit ${String(limit)} is not a size (e.g. '16kb' or 16384)`);
  }
  return maxBytes;
}

/**
 * The charset of a form's Content-Type: UTF-8 unless it names ISO-8859-1 (the two body-parser reads); undefined
 * when it names another, or a parameter is malformed.
 */
function formCharset(parameters: readonly string[]): 'utf-8' | 'iso-8859-1' | undefined {
  let charset: 'utf-8' | 'iso-8859-1' = 'utf-8';
  for (const parameter of parameters) {
    const equals = parameter.indexOf('=');
    if (equals < 0) return undefined;
    if (parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    const value = parameter
      .slice(equals + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (value !== 'utf-8' && value !== 'iso-8859-1') return undefined;
    charset = value;
  }
  return charset;
}

/**
 * The reader of a POST endpoint's stack: an `application/x-www-form-urlencoded` body (UTF-8 or ISO-8859-1, any
 * content coding body-parser reads) up to `limit`, into the request's context; anything else is invalid_request.
 * The form stays off `req.body` (a client secret sent in it is not left on the request for the application's
 * middleware to log); a body the application read before the router (its own body-parser) is taken from there.
 * One reader of the package's own rather than body-parser: the parity with body-parser's values is a property
 * test (test/gateway/http/routing-and-body.test.ts), the cost each saves in bench/README.md.
 */
export function formBody(limit: string | number): RequestHandler {
  const maxBytes = sizeLimit(limit);
  return step((request, req, _res, next) => {
    const [type = '', ...parameters] = (req.headers['content-type'] ?? '').split(';');
    if (type.trim().toLowerCase() !== FORM_TYPE) {
      next(new OAuthError('invalid_request', `Content-Type must be ${FORM_TYPE}`));
      return;
    }
    const charset = formCharset(parameters);
    if (charset === undefined) {
      next(bodyUnreadable());
      return;
    }
    if (req.readableEnded) {
      // Read before the router by the application's own parser, or by this reader earlier in the stack.
      const body: unknown = req.body;
      if (body !== null && typeof body === 'object') request.params = new FormParams(body as Record<string, unknown>);
      next();
      return;
    }
    readBody(req, maxBytes).then((body) => {
      // The bytes' hash is kept for a DPoP proof's camara:bh: once parsed, the body's exact bytes are gone.
      if (req.headers.dpop !== undefined) request.bodyHash = sha256Of(body);
      try {
        request.params = parseForm(body, charset);
      } catch (error) {
        next(error);
        return;
      }
      next();
    }, next);
  });
}

/** The reader of a GET endpoint's stack: the query's parameters into the request's context. */
export const queryForm: RequestHandler = step((request, req, _res, next) => {
  request.params = queryParams(req);
  next();
});
