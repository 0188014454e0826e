import type { Request, RequestHandler } from 'express';
import * as oidc from 'openid-client';
import type { CallbackOptions, NetAuthClientOptions } from './options.js';
import { NetAuthClientError, fromOAuthError } from './errors.js';
import { fromOpenIdClientError } from './configuration.js';
import { promisify, sessionOf, type SessionToken } from './session.js';
import { middleware } from './middleware.js';

function single(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The URL openid-client validates: the configured redirect URI with the callback's query. Never built from
 * Host or X-Forwarded-* headers, so a TLS-terminating proxy that rewrites them changes nothing.
 */
function currentUrl(redirectUri: string, req: Request): URL {
  const url = new URL(redirectUri);
  const query = req.originalUrl.indexOf('?');
  if (query >= 0) {
    for (const [key, value] of new URLSearchParams(req.originalUrl.slice(query + 1))) url.searchParams.append(key, value);
  }
  return url;
}

/**
 * The redirect-URI endpoint: checks state, then either hands the application's error handler a typed error
 * (storing nothing) or exchanges the code, regenerates the session (no fixation) and stores the token.
 */
export function callbackMiddleware(
  options: NetAuthClientOptions,
  config: () => Promise<oidc.Configuration>,
  callback: CallbackOptions,
): RequestHandler {
  if (!options.redirectUri) throw new TypeError('callback() needs the client option redirectUri');
  const redirectUri = options.redirectUri;
  return middleware(async (req, _res, next) => {
    const session = sessionOf(req);
    const state = single(req.query.state);
    const pending = state === undefined ? undefined : session.netauth?.pending?.[state];
    if (state !== undefined && pending && session.netauth?.pending) {
      // The state is single-use whatever the outcome.
      delete session.netauth.pending[state];
    }
    if (!pending) {
      // A session this package never wrote to: usually the browser did not send the session cookie back.
      throw new NetAuthClientError(
        'state_mismatch',
        session.netauth === undefined
          ? "the callback state does not match a flow started by this session, which has started none: if one was just started, the browser did not send the session cookie back (check express-session's cookie secure, sameSite and domain)"
          : 'the callback state does not match a flow started by this session',
      );
    }
    const error = single(req.query.error);
    if (error !== undefined) {
      throw fromOAuthError(error, single(req.query.error_description));
    }

    let tokens: oidc.TokenEndpointResponse;
    try {
      tokens = await oidc.authorizationCodeGrant(await config(), currentUrl(redirectUri, req), {
        pkceCodeVerifier: pending.code_verifier,
        expectedState: pending.state,
        ...(pending.nonce === undefined ? {} : { expectedNonce: pending.nonce }),
      });
    } catch (cause) {
      if (cause instanceof oidc.AuthorizationResponseError) {
        throw fromOAuthError(cause.error, cause.error_description, cause);
      }
      throw fromOpenIdClientError(cause);
    }

    const token: SessionToken = {
      access_token: tokens.access_token,
      token_type: tokens.token_type,
      expires_at: Date.now() + (tokens.expires_in ?? 0) * 1000,
      scope: tokens.scope,
      data: pending.data,
    };
    // A new session id for the authenticated session (a fixated id from before the flow is worthless);
    // what the application kept in the session comes along.
    const kept = Object.fromEntries(Object.entries(session).filter(([key]) => key !== 'cookie' && key !== 'netauth'));
    const pendingOthers = session.netauth?.pending ?? {};
    await promisify((cb) => session.regenerate(cb));
    const fresh = sessionOf(req);
    Object.assign(fresh, kept);
    fresh.netauth = { token, ...(Object.keys(pendingOthers).length > 0 ? { pending: pendingOthers } : {}) };
    await promisify((cb) => fresh.save(cb));

    const target = pending.returnTo ?? callback.successRedirect ?? options.successRedirect;
    if (target !== undefined) {
      _res.redirect(302, target);
      return;
    }
    next();
  });
}
