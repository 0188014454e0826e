import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type RequestHandler, type Response } from 'express';
import { OAuthError } from '../../errors.js';
import { MAX_PARAMETERS, FormParams, queryParams, tooManyParameters } from './form.js';
import { findRequestContext, step } from './request-context.js';
import { sha256Of } from '../tokens/dpop-binding.js';

const FORM_TYPE = 'application/x-www-form-urlencoded';

interface BodyParserError {
  type?: unknown;
  status?: unknown;
}

/** body-parser's errors as OAuth errors: 413 for too large, 400 for anything else about the body (too many parameters). */
export function bodyError(error: unknown): OAuthError | undefined {
  if (error === null || typeof error !== 'object' || !('type' in error)) return undefined;
  const { type, status } = error as BodyParserError;
  if (typeof type !== 'string' || typeof status !== 'number') return undefined;
  if (type === 'entity.too.large') return new OAuthError('invalid_request', 'request body too large', { status: 413 });
  if (type === 'parameters.too.many') return tooManyParameters();
  if (status >= 400 && status < 500) return unreadable();
  return undefined;
}

function unreadable(): OAuthError {
  return new OAuthError('invalid_request', 'request body could not be read');
}

/**
 * A failure to read the body: body-parser passes decompression failures (`Content-Encoding: gzip`, `br` or
 * `deflate` on a body that is not) on as 400s without a `type`; they are the client's too, never a 500.
 */
function readError(error: unknown): unknown {
  const known = bodyError(error);
  if (known !== undefined) return known;
  const status = error !== null && typeof error === 'object' ? (error as BodyParserError).status : undefined;
  return typeof status === 'number' && status >= 400 && status < 500 ? unreadable() : error;
}

/** Whether a request has a body at all (type-is's test): one is framed by Transfer-Encoding or Content-Length. */
export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}

/**
 * The reader of a POST endpoint's stack: an `application/x-www-form-urlencoded` body up to `limit` (anything else
 * is invalid_request), read by body-parser into the request's context. `extended: false` keeps values flat and
 * turns a repeated name into an array, which FormParams refuses. The form stays off `req.body` (a client secret
 * sent in it is not left on the request for the application's middleware to log); a body the application read
 * before the router (its own body-parser) is taken from there.
 */
export function formBody(limit: string | number): RequestHandler {
  // The bytes' hash is kept for a DPoP proof's camara:bh: once parsed, the body's exact bytes are gone.
  const verify = (req: IncomingMessage, res: ServerResponse, bytes: Buffer): void => {
    const request = req.headers.dpop === undefined ? undefined : findRequestContext(res as Response);
    if (request !== undefined) request.bodyHash = sha256Of(bytes);
  };
  const parse = express.urlencoded({
    extended: false,
    limit,
    parameterLimit: MAX_PARAMETERS,
    type: FORM_TYPE,
    verify,
  });
  return step((request, req, res, next) => {
    if (!req.is(FORM_TYPE)) {
      next(new OAuthError('invalid_request', `Content-Type must be ${FORM_TYPE}`));
      return;
    }
    const before: unknown = req.body;
    parse(req, res, (error?: unknown) => {
      const body: unknown = req.body;
      req.body = before;
      if (error !== undefined && error !== null) {
        next(readError(error));
        return;
      }
      // A request without a body has the empty byte stream's hash (body-parser calls no verify for it).
      if (request.bodyHash === undefined && req.headers.dpop !== undefined && !hasBody(req))
        request.bodyHash = sha256Of(Buffer.alloc(0));
      // None when this reader read the body before on this request: the form is in the context already.
      if (body !== null && typeof body === 'object') request.params = new FormParams(body as Record<string, unknown>);
      next();
    });
  });
}

/** The reader of a GET endpoint's stack: the query's parameters into the request's context. */
export const queryForm: RequestHandler = step((request, req, _res, next) => {
  request.params = queryParams(req);
  next();
});
