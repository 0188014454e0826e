import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
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

/** Accepts `application/x-www-form-urlencoded` only, up to `limit`; everything else is invalid_request. */
export function formBody(limit: string | number): RequestHandler[] {
  const requireForm: RequestHandler = (req, _res, next) => {
    if (!req.is(FORM_TYPE)) {
      next(new OAuthError('invalid_request', `Content-Type must be ${FORM_TYPE}`));
      return;
    }
    next();
  };
  // extended:false keeps values flat (no nested objects) and turns repeats into arrays, which FormParams refuses.
  const parse = express.urlencoded({ extended: false, limit, parameterLimit: MAX_PARAMETERS, type: FORM_TYPE });
  // body-parser passes decompression failures (`Content-Encoding: gzip`, `br` or `deflate` on a body that is
  // not) on as 400s without a `type`: they are the client's too, never a 500.
  const parseForm: RequestHandler = (req, res, next) => {
    parse(req, res, (error?: unknown) => {
      if (error === undefined) {
        next();
        return;
      }
      const status = error !== null && typeof error === 'object' ? (error as BodyParserError).status : undefined;
      const clientError = typeof status === 'number' && status >= 400 && status < 500;
      next(bodyError(error) ?? (clientError ? new OAuthError('invalid_request', 'request body could not be read') : error));
    });
  };
  return [requireForm, parseForm];
}

export function formParams(req: Request): FormParams {
  const body: unknown = req.body;
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
