import type { ErrorRequestHandler, Response } from 'express';
import { OAuthError } from '../errors.js';
import { StoreUnavailableError } from '../stores/store.js';
import { bodyError } from './form.js';

/**
 * The one place errors become responses. Anything that is not already an OAuthError is classified here:
 * body-parser failures are the client's (400/413), an unreachable store is 503 temporarily_unavailable,
 * and everything else is a bare 500 server_error that reveals nothing.
 */
export function toOAuthError(error: unknown, onError: (error: unknown) => void): OAuthError {
  if (error instanceof OAuthError) return error;
  const fromBody = bodyError(error);
  if (fromBody) return fromBody;
  if (error instanceof StoreUnavailableError) {
    return new OAuthError('temporarily_unavailable', 'the service is temporarily unavailable', { headers: { 'Retry-After': '5' } });
  }
  onError(error);
  return new OAuthError('server_error', 'internal error');
}

/** RFC 6749 §5.2 JSON error body. */
export function sendJsonError(res: Response, error: OAuthError): void {
  res.set(error.headers);
  res.status(error.status).json(error.toJSON());
}

/**
 * RFC 6750 §3: the challenge carries the error and the body repeats it as JSON. Without an error
 * (no credentials at all) the challenge names only the realm, as §3.1 asks.
 */
export function sendBearerError(res: Response, realm: string, error: OAuthError | undefined, scope?: string): void {
  const quote = (v: string): string => v.replace(/["\\]/g, '');
  let challenge = `Bearer realm="${quote(realm)}"`;
  if (error) {
    challenge += `, error="${error.code}"`;
    if (error.description) challenge += `, error_description="${quote(error.description)}"`;
  }
  if (scope) challenge += `, scope="${quote(scope)}"`;
  res.set('WWW-Authenticate', challenge);
  if (!error) {
    res.status(401).end();
    return;
  }
  res.set(error.headers);
  res.status(error.status).json(error.toJSON());
}

/** Error handler for the JSON endpoints (bc-authorize, token, discovery). */
export function jsonErrorHandler(onError: (error: unknown) => void): ErrorRequestHandler {
  return (error: unknown, _req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    sendJsonError(res, toOAuthError(error, onError));
  };
}
