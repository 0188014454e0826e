import type { RequestHandler } from 'express';
import * as oidc from 'openid-client';
import type { LogoutOptions } from '../options.js';
import type { ClientContext } from '../configuration.js';
import { NetAuthClientError, fromOpenIdClientError } from '../errors.js';
import { promisify, sessionOf } from '../session.js';
import { middleware } from './async-handler.js';

/** Revokes a token at the gateway's revocation endpoint (RFC 7009). */
export async function revokeToken(
  ctx: ClientContext,
  token: string,
  hint?: 'access_token' | 'refresh_token',
): Promise<void> {
  try {
    const { config } = await ctx.load();
    if (!config.serverMetadata().revocation_endpoint) {
      throw new NetAuthClientError(
        'misconfigured',
        'the gateway announces no revocation_endpoint, so tokens cannot be revoked',
      );
    }
    await oidc.tokenRevocation(config, token, hint ? { token_type_hint: hint } : undefined);
  } catch (cause) {
    throw fromOpenIdClientError(cause);
  }
}

/**
 * Logout: revokes the session's tokens at the gateway (the refresh token first: RFC 7009 §2.1 has that end
 * the grant), then clears the session whatever the gateway answered, so the user is logged out even when the
 * gateway is down. A failed revocation then reaches the error handler, saying the session is already cleared.
 * A gateway without a revocation endpoint: the session is cleared and the token lapses at its expiry.
 */
export function logoutMiddleware(ctx: ClientContext, options: LogoutOptions): RequestHandler {
  return middleware(async (req, res, next) => {
    const session = sessionOf(req);
    const tokens = [
      [session.netauth?.refresh_token, 'refresh_token'],
      [session.netauth?.token?.access_token, 'access_token'],
    ] as const;
    let failure: NetAuthClientError | undefined;
    try {
      const { config } = await ctx.load();
      if (config.serverMetadata().revocation_endpoint) {
        for (const [token, hint] of tokens) if (token !== undefined) await revokeToken(ctx, token, hint);
      }
    } catch (cause) {
      const error = fromOpenIdClientError(cause);
      failure = new NetAuthClientError(
        error.kind,
        `the session was cleared, but the gateway did not confirm the revocation: ${error.message}`,
        {
          ...(error.error === undefined ? {} : { error: error.error }),
          ...(error.description === undefined ? {} : { description: error.description }),
          status: error.status,
          cause: error,
        },
      );
    }
    await promisify((cb) => session.regenerate(cb));
    if (failure) throw failure;
    if (options.successRedirect !== undefined) return void res.redirect(302, options.successRedirect);
    next();
  });
}
