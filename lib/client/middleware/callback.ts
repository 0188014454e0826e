import type { RequestHandler } from 'express';
import * as oidc from 'openid-client';
import type { CallbackOptions } from '../options.js';
import { dpopOption, sent, type ClientContext } from '../configuration.js';
import { NetAuthClientError, fromOpenIdClientError } from '../errors.js';
import { covers, promisify, sessionOf, sessionTokenOf } from '../session.js';
import { middleware } from './async-handler.js';

/** The authorization response's parameters, each at most once (a repeated one is not a response the gateway sent). */
const RESPONSE_PARAMETERS = ['state', 'code', 'iss', 'error', 'error_description'];

/**
 * The URL openid-client validates: the configured redirect URI with the callback's query. Never built from
 * Host or X-Forwarded-* headers, so a TLS-terminating proxy that rewrites them changes nothing.
 */
function currentUrl(redirectUri: string, query: URLSearchParams): URL {
  const url = new URL(redirectUri);
  for (const [key, value] of query) url.searchParams.append(key, value);
  return url;
}

function invalidCallback(message: string, cause?: unknown): NetAuthClientError {
  return new NetAuthClientError('invalid_callback', message, { cause });
}

/**
 * The code exchange. openid-client validates the whole authorization response (RFC 9207 `iss` first, then
 * `state`, then `error`) before it sends the code, so whatever fails before a request left lies in the
 * callback (4xx), and a refused code (`invalid_grant`) is a stale or forged one; only the rest is the gateway's.
 */
async function exchange(
  ctx: ClientContext,
  url: URL,
  checks: oidc.AuthorizationCodeGrantChecks,
): Promise<oidc.TokenEndpointResponse> {
  const probe = { sent: false };
  try {
    const { config, dpop } = await ctx.load();
    return await sent.run(probe, () => oidc.authorizationCodeGrant(config, url, checks, undefined, dpopOption(dpop)));
  } catch (cause) {
    if (cause instanceof NetAuthClientError || cause instanceof oidc.AuthorizationResponseError)
      throw fromOpenIdClientError(cause);
    if (!probe.sent)
      throw invalidCallback(
        'the authorization response is not a valid answer of this gateway (RFC 9207 iss, or its shape)',
        cause,
      );
    if (cause instanceof oidc.ResponseBodyError && cause.error === 'invalid_grant') {
      throw invalidCallback('the gateway refused the code: unknown, used, expired, or not issued for this flow', cause);
    }
    throw fromOpenIdClientError(cause);
  }
}

/**
 * The redirect-URI endpoint: checks state, then either hands the application's error handler a typed error
 * (storing nothing) or exchanges the code, regenerates the session (no fixation) and stores the token.
 */
export function callbackMiddleware(ctx: ClientContext, callback: CallbackOptions): RequestHandler {
  if (!ctx.options.redirectUri) throw new TypeError('callback() needs the client option redirectUri');
  const redirectUri = ctx.options.redirectUri;
  return middleware(async (req, res, next) => {
    const session = sessionOf(req);
    const queryAt = req.originalUrl.indexOf('?');
    const query = new URLSearchParams(queryAt >= 0 ? req.originalUrl.slice(queryAt + 1) : '');
    const state = query.getAll('state').length === 1 ? query.get('state') || undefined : undefined;
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
    if (RESPONSE_PARAMETERS.some((name) => query.getAll(name).length > 1))
      throw invalidCallback('the authorization response repeats a parameter');
    if (!query.get('code') && !query.get('error'))
      throw invalidCallback('the authorization response carries neither code nor error');

    const tokens = await exchange(ctx, currentUrl(redirectUri, query), {
      pkceCodeVerifier: pending.code_verifier,
      expectedState: pending.state,
      ...(pending.nonce === undefined ? {} : { expectedNonce: pending.nonce }),
    });
    const token = sessionTokenOf(tokens, ctx.now(), pending.scope, pending.data);
    if (pending.required && !covers(token.scope, pending.scope)) {
      throw new NetAuthClientError(
        'denied',
        `the gateway granted "${token.scope ?? ''}", less than the "${pending.scope}" this route requires`,
      );
    }
    // A new session id for the authenticated session (a fixated id from before the flow is worthless);
    // what the application kept in the session comes along.
    const kept = Object.fromEntries(Object.entries(session).filter(([key]) => key !== 'cookie' && key !== 'netauth'));
    const pendingOthers = session.netauth?.pending ?? {};
    await promisify((cb) => session.regenerate(cb));
    const fresh = sessionOf(req);
    Object.assign(fresh, kept);
    fresh.netauth = {
      token,
      ...(tokens.refresh_token === undefined ? {} : { refresh_token: tokens.refresh_token }),
      ...(Object.keys(pendingOthers).length > 0 ? { pending: pendingOthers } : {}),
    };
    await promisify((cb) => fresh.save(cb));

    const target = pending.returnTo ?? callback.successRedirect ?? ctx.options.successRedirect;
    if (target !== undefined) {
      res.redirect(302, target);
      return;
    }
    next();
  });
}
