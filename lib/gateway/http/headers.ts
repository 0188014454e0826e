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
