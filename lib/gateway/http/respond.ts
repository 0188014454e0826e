import type { RequestHandler, Response } from 'express';

/** RFC 6749 §5.1 / CIBA §7.3: token and bc-authorize responses must not be cached. */
export const noStore: RequestHandler = (_req, res, next) => {
  // setHeader: Express's res.set would look for a charset to add to every header it is given.
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  next();
};

export { methodNotAllowed } from '../../method-not-allowed.js';

/**
 * Headers of every frontend-flow response (authorize, consent page, their errors): never framed, never
 * cached, never leaking the URL (which carries codes and state) as a Referer.
 */
export const frontendHeaders: RequestHandler = (_req, res, next) => {
  res.set('Cache-Control', 'no-store');
  res.set('Pragma', 'no-cache');
  res.set('X-Frame-Options', 'DENY');
  res.set('Referrer-Policy', 'no-referrer');
  res.set('X-Content-Type-Options', 'nosniff');
  res.set('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  next();
};

/**
 * Writes a JSON answer directly: what `res.status().json()` does for these endpoints, minus the ETag that
 * Express computes for every body (a SHA-1 per response, useless on `no-store` answers).
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

/**
 * Where a frontend-flow request answers once its client and redirect_uri are known to be registered
 * (docs/protocol.md, frontend step 2): the authorization response, and from then on its errors too.
 */
export interface RedirectTarget {
  redirectUri: string;
  /** The state exactly as sent; undefined when none was sent (none is ever invented). */
  state: string | undefined;
  /** 302 from GET /authorize, 303 after the consent form's POST. */
  status: 302 | 303;
}

/**
 * The authorization response (RFC 6749 §4.1.2): the parameters in the redirect_uri's query, the query it
 * already has kept, then `state` if one was sent and `iss` (RFC 9207).
 */
export function sendAuthorizationResponse(
  res: Response,
  issuer: string,
  target: RedirectTarget,
  params: Record<string, string | undefined>,
): void {
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
