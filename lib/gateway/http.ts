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
