import type { RequestHandler } from 'express';
import type { RequireTokenOptions } from '../options.js';
import type { ClientContext } from '../configuration.js';
import { NetAuthClientError } from '../errors.js';
import { covers } from '../session.js';
import { sessionToken } from '../refresh.js';
import { beginAuthorization } from './start.js';
import { middleware } from './async-handler.js';

/**
 * Guards the application's own routes: with a live session token that covers the scope, `next()`; otherwise
 * (GET and HEAD) the frontend flow starts and the callback comes back to this same URL. Other methods cannot
 * be replayed after a redirect, so they fail with `no_token` / `token_expired` (401) instead. An expiring token
 * with a refresh token in the session is refreshed (and the refresh token rotated) first.
 */
export function requireTokenMiddleware(ctx: ClientContext, options: RequireTokenOptions): RequestHandler {
  if (!ctx.options.redirectUri) throw new TypeError('requireToken() needs the client option redirectUri');
  return middleware(async (req, res, next) => {
    const token = await sessionToken(ctx, req);
    const scope = typeof options.scope === 'function' ? options.scope(req) : options.scope;
    if (token && !token.expired && covers(token.scope, scope)) return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw token?.expired
        ? new NetAuthClientError('token_expired', 'the access token in this session has expired')
        : new NetAuthClientError('no_token', 'no access token for this scope in this session');
    }
    await beginAuthorization(ctx, req, res, { ...options, scope, returnTo: req.originalUrl }, true);
  });
}
