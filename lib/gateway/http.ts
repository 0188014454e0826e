import type { RequestHandler } from 'express';

/** RFC 6749 §5.1 / CIBA §7.3: token and bc-authorize responses must not be cached. */
export const noStore: RequestHandler = (_req, res, next) => {
  res.set('Cache-Control', 'no-store');
  res.set('Pragma', 'no-cache');
  next();
};

/** Another method on an endpoint path: 405 with Allow, as JSON. */
export function methodNotAllowed(allow: string): RequestHandler {
  return (_req, res) => {
    res.set('Allow', allow).status(405).json({ error: 'invalid_request', error_description: `method not allowed; use ${allow}` });
  };
}

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
