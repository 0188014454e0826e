import { randomBytes } from 'node:crypto';
import type { ErrorRequestHandler, Response } from 'express';
import { OAuthError } from '../../errors.js';
import { StoreUnavailableError } from '../../stores/store.js';
import { bodyError } from './read-params.js';
import { contentSecurityPolicy, renderErrorPage, type ConsentPageConfig } from './consent-template.js';
import { findRequestContext, type RequestContext } from './request-context.js';
import { speaking } from '../page-language.js';
import { sendAuthorizationResponse, sendJson, type RedirectTarget } from './respond.js';

/** Told when a request is answered 503 because the store cannot be reached (the gateway says it once). */
export type StoreReport = (error: Error) => void;

/**
 * The one place errors become responses. Anything that is not already an OAuthError is classified here:
 * body-parser failures (an application's parser before the router) are the client's (400/413), an unreachable store is 503 temporarily_unavailable,
 * and everything else is a bare 500 server_error that reveals nothing.
 */
export function toOAuthError(
  error: unknown,
  onError: (error: unknown) => void,
  storeUnavailable?: StoreReport,
): OAuthError {
  if (error instanceof OAuthError) return error;
  const fromBody = bodyError(error);
  if (fromBody) return fromBody;
  if (error instanceof StoreUnavailableError) {
    storeUnavailable?.(error);
    return new OAuthError('temporarily_unavailable', 'the service is temporarily unavailable', {
      headers: { 'Retry-After': '5' },
    });
  }
  onError(error);
  return new OAuthError('server_error', 'internal error');
}

/** Keeps the error's code in the request's context (if the request reached an endpoint), for its outcome. */
function answered(res: Response, error: OAuthError): RequestContext | undefined {
  const request = findRequestContext(res);
  if (request) request.answered = error.code;
  return request;
}

/** RFC 6749 §5.2 JSON error body. */
export function sendJsonError(res: Response, error: OAuthError): void {
  res.set(error.headers);
  sendJson(res, error.status, error.toJSON());
}

/** A challenge parameter's value: quotes and backslashes dropped, so it stays one quoted-string. */
function quoted(value: string): string {
  return `"${value.replace(/["\\]/g, '')}"`;
}

/**
 * One `WWW-Authenticate` challenge (RFC 6750 §3, RFC 9449 §7.1): `<scheme> realm="…", error="…", …`, with the
 * parameters given a value, in order. The error's description goes with its code.
 */
export function authChallenge(
  scheme: 'Bearer' | 'DPoP',
  realm: string,
  error: OAuthError | undefined,
  params: Record<string, string | undefined> = {},
): string {
  const parts = [`realm=${quoted(realm)}`];
  if (error) {
    parts.push(`error="${error.code}"`);
    if (error.description) parts.push(`error_description=${quoted(error.description)}`);
  }
  for (const [name, value] of Object.entries(params)) if (value) parts.push(`${name}=${quoted(value)}`);
  return `${scheme} ${parts.join(', ')}`;
}

/**
 * A refusal of the service-API guard: its challenges (one `WWW-Authenticate` line each), the error's headers, and
 * the body in the guard's format. Without a body (a request with no credentials, RFC 6750 §3.1) the 401 is empty.
 */
export function sendGuardError(
  res: Response,
  status: number,
  challenges: readonly string[],
  error: OAuthError | undefined,
  body: object | undefined,
): void {
  if (error) res.set(error.headers);
  if (challenges.length > 0) res.set('WWW-Authenticate', [...challenges]);
  if (body === undefined) {
    res.status(status).end();
    return;
  }
  sendJson(res, status, body);
}

/**
 * An error once the response has started (e.g. express-session failing to write after `res.end`): no one is
 * left to tell, so an unexpected one is reported and an unfinished response cut. It goes no further: Express's
 * final handler would print its stack trace.
 */
function afterResponse(res: Response, error: unknown, onError: (error: unknown) => void, store?: StoreReport): void {
  toOAuthError(error, onError, store);
  if (!res.writableEnded) res.destroy();
}

/**
 * Error handler for the JSON endpoints (bc-authorize, token, introspection, revocation, discovery), and for
 * errors the application's own middleware hands to the router (no request context then).
 */
export function jsonErrorHandler(onError: (error: unknown) => void, store?: StoreReport): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    if (res.headersSent) {
      afterResponse(res, error, onError, store);
      return;
    }
    const oauthError = toOAuthError(error, onError, store);
    answered(res, oauthError);
    sendJsonError(res, oauthError);
  };
}

/** An error of the frontend flow, redirected to the application. */
function sendRedirectError(res: Response, issuer: string, target: RedirectTarget, error: OAuthError): void {
  sendAuthorizationResponse(res, issuer, target, { error: error.code, error_description: error.description });
}

/** The HTML error page: for requests that must not redirect (unknown client, unregistered redirect_uri, a refused form). */
function sendErrorPage(res: Response, page: ConsentPageConfig, error: OAuthError): void {
  const nonce = randomBytes(16).toString('base64');
  res.set(error.headers);
  res.set('Content-Security-Policy', contentSecurityPolicy(page, nonce));
  res
    .status(error.status)
    .type('html')
    .send(renderErrorPage(page, nonce, error.code, error.description));
}

/** Error handler for the frontend flow (authorize, consent page): a redirect when the target is known, else the error page. */
export function frontendErrorHandler(
  issuer: string,
  page: ConsentPageConfig,
  onError: (error: unknown) => void,
  store?: StoreReport,
): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (res.headersSent) {
      afterResponse(res, error, onError, store);
      return;
    }
    const oauthError = toOAuthError(error, onError, store);
    const target = answered(res, oauthError)?.redirectTarget;
    if (target) sendRedirectError(res, issuer, target, oauthError);
    else sendErrorPage(res, speaking(page, req, res), oauthError);
  };
}
