import { randomBytes } from 'node:crypto';
import type { ErrorRequestHandler, Response } from 'express';
import { OAuthError, type OAuthErrorCode } from '../../errors.js';
import { StoreUnavailableError } from '../../stores/store.js';
import { bodyError } from './form.js';
import { contentSecurityPolicy, renderErrorPage, type ConsentPageConfig } from './consent-template.js';
import { sendJson } from './headers.js';

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

/** The OAuth error each answered response carried, for the `request.completed` event's outcome. */
const answeredErrors = new WeakMap<Response, OAuthErrorCode>();

/** The OAuth error code the response was rendered with, if it was an error. */
export function answeredError(res: Response): OAuthErrorCode | undefined {
  return answeredErrors.get(res);
}

/** RFC 6749 §5.2 JSON error body. */
export function sendJsonError(res: Response, error: OAuthError): void {
  answeredErrors.set(res, error.code);
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
export function authChallenge(scheme: 'Bearer' | 'DPoP', realm: string, error: OAuthError | undefined, params: Record<string, string | undefined> = {}): string {
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
export function sendGuardError(res: Response, status: number, challenges: readonly string[], error: OAuthError | undefined, body: object | undefined): void {
  if (error) {
    answeredErrors.set(res, error.code);
    res.set(error.headers);
  }
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
function afterResponse(res: Response, error: unknown, onError: (error: unknown) => void): void {
  toOAuthError(error, onError);
  if (!res.writableEnded) res.destroy();
}

/** Error handler for the JSON endpoints (bc-authorize, token, discovery). */
export function jsonErrorHandler(onError: (error: unknown) => void): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    if (res.headersSent) {
      afterResponse(res, error, onError);
      return;
    }
    sendJsonError(res, toOAuthError(error, onError));
  };
}

/**
 * Where a frontend-flow request answers once its client and redirect_uri are known to be registered
 * (docs/protocol.md, frontend step 2): from then on errors go back to the application, not to an error page.
 */
export interface RedirectTarget {
  redirectUri: string;
  /** The state exactly as sent; undefined when none was sent (none is ever invented). */
  state: string | undefined;
  /** 302 from GET /authorize, 303 after the consent form's POST. */
  status: 302 | 303;
}

const redirectTargets = new WeakMap<Response, RedirectTarget>();

/** Marks the response as redirectable: later errors are rendered as a redirect to `target`. */
export function setRedirectTarget(res: Response, target: RedirectTarget): void {
  redirectTargets.set(res, target);
}

/**
 * The authorization response (RFC 6749 §4.1.2): the parameters in the redirect_uri's query, the query it
 * already has kept, then `state` if one was sent and `iss` (RFC 9207).
 */
export function sendAuthorizationResponse(res: Response, issuer: string, target: RedirectTarget, params: Record<string, string | undefined>): void {
  const hash = target.redirectUri.indexOf('#');
  const base = hash < 0 ? target.redirectUri : target.redirectUri.slice(0, hash);
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.append(name, value);
  if (target.state !== undefined) query.append('state', target.state);
  query.append('iss', issuer);
  const separator = base.includes('?') ? (base.endsWith('?') || base.endsWith('&') ? '' : '&') : '?';
  res.set('Location', `${base}${separator}${query.toString()}`);
  res.status(target.status).end();
}

/** An error of the frontend flow, redirected to the application. */
export function sendRedirectError(res: Response, issuer: string, target: RedirectTarget, error: OAuthError): void {
  answeredErrors.set(res, error.code);
  sendAuthorizationResponse(res, issuer, target, { error: error.code, error_description: error.description });
}

/** The HTML error page: for requests that must not redirect (unknown client, unregistered redirect_uri, a refused form). */
export function sendErrorPage(res: Response, page: ConsentPageConfig, error: OAuthError): void {
  const nonce = randomBytes(16).toString('base64');
  answeredErrors.set(res, error.code);
  res.set(error.headers);
  res.set('Content-Security-Policy', contentSecurityPolicy(page, nonce));
  res.status(error.status).type('html').send(renderErrorPage(page, nonce, error.code, error.description));
}

/** Error handler for the frontend flow (authorize, consent page): a redirect when the target is known, else the error page. */
export function frontendErrorHandler(issuer: string, page: ConsentPageConfig, onError: (error: unknown) => void): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    if (res.headersSent) {
      afterResponse(res, error, onError);
      return;
    }
    const oauthError = toOAuthError(error, onError);
    const target = redirectTargets.get(res);
    if (target) sendRedirectError(res, issuer, target, oauthError);
    else sendErrorPage(res, page, oauthError);
  };
}
