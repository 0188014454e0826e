import type { Request } from 'express';

/**
 * The endpoint path a request names under the router's mount point, as express.Router matches it by default
 * (case-insensitive, one trailing slash optional): `/Token/` names `/token`.
 */
export function routePath(req: Request): string {
  const path = req.path.toLowerCase();
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
