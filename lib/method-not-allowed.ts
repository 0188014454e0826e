import type { RequestHandler } from 'express';

/**
 * Another method on an endpoint path: 405 with Allow, as JSON. Below gateway/ so every room that mounts a route
 * (the gateway's endpoints, the metrics endpoint) answers it alike.
 */
export function methodNotAllowed(allow: string): RequestHandler {
  return (_req, res) => {
    const description = `method not allowed; use ${allow}`;
    res.set('Allow', allow).status(405).json({ error: 'invalid_request', error_description: description });
  };
}
