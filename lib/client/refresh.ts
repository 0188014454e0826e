import type { Request } from 'express';
import * as oidc from 'openid-client';
import type { ClientContext } from './configuration.js';
import { NetAuthClientError, fromOpenIdClientError } from './errors.js';
import { getToken, liveToken, promisify, sessionOf, type TokenState } from './session.js';
import { backchannelToken, type BackchannelToken } from './backchannel.js';

/**
 * Refresh tokens (RFC 6749 §6; the CAMARA profile's `offline_access`), used before the access token expires:
 * the session's token in `requireToken()` and `fetch()`, a backend-flow token with `refresh()`. The gateway
 * rotates the refresh token at every use and revokes the whole grant when a rotated-out one comes back (RFC 9700
 * §4.14.2), so a refresh token is presented at most once from this process: concurrent refreshes of one token
 * share one request, and its result is kept a short while for requests that read the session just before it
 * was saved.
 */

/** How long a refresh's result stays shared after it arrived (ms): longer than any request takes to reach its refresh. */
const SHARED_FOR = 60_000;

interface Shared {
  promise: Promise<oidc.TokenEndpointResponse>;
  /** Epoch ms (real time) after which the result is no longer handed out; Infinity while the request is in flight. */
  until: number;
}

/** Per client (one NetAuthClient's context), by refresh token. */
const sharedByClient = new WeakMap<ClientContext, Map<string, Shared>>();

/** A refresh the gateway refused (`invalid_grant`): the grant is over, a new flow is needed, as after expiry. */
function refused(cause: unknown): NetAuthClientError {
  return new NetAuthClientError('token_expired', 'the gateway refused the refresh token (expired, revoked, or consent withdrawn): start a new flow', {
    error: 'invalid_grant',
    cause,
  });
}

/**
 * A shared refresh's result, followed along later refreshes of the tokens it gave (a request that read the
 * session long ago must not bring back a refresh token that was rotated since).
 */
async function latest(shared: Map<string, Shared>, first: Promise<oidc.TokenEndpointResponse>): Promise<oidc.TokenEndpointResponse> {
  let response = await first;
  for (let hops = 0; hops < 10; hops++) {
    const next = response.refresh_token === undefined ? undefined : shared.get(response.refresh_token);
    if (!next) break;
    try {
      response = await next.promise;
    } catch {
      break;
    }
  }
  return response;
}

/** One refresh_token grant per refresh token at a time; errors typed (`token_expired` when refused). */
function refreshTokens(ctx: ClientContext, refreshToken: string): Promise<oidc.TokenEndpointResponse> {
  let shared = sharedByClient.get(ctx);
  if (!shared) sharedByClient.set(ctx, (shared = new Map()));
  const now = Date.now();
  for (const [key, entry] of shared) if (entry.until <= now) shared.delete(key);
  const found = shared.get(refreshToken);
  if (found) return latest(shared, found.promise);
  const entry: Shared = {
    until: Infinity,
    promise: (async () => {
      try {
        const { config } = await ctx.load();
        return await oidc.refreshTokenGrant(config, refreshToken);
      } catch (cause) {
        throw cause instanceof oidc.ResponseBodyError && cause.error === 'invalid_grant' ? refused(cause) : fromOpenIdClientError(cause);
      }
    })(),
  };
  shared.set(refreshToken, entry);
  entry.promise.then(
    () => void (entry.until = Date.now() + SHARED_FOR),
    // A failure is not shared afterwards: a later request may try again (the gateway may be back).
    () => void shared.delete(refreshToken),
  );
  return entry.promise;
}

function refreshBefore(ctx: ClientContext): number {
  return (ctx.options.refreshBeforeExpiry ?? 30) * 1000;
}

/**
 * The session's token, refreshed first when it expires within `refreshBeforeExpiry` and the session holds a
 * refresh token: the rotated refresh token and the new access token are stored and the session saved before
 * anything uses them. A refused refresh drops the refresh token (the token then ends as an expired one does);
 * a gateway that cannot be reached leaves a still-valid token in use, and fails only once it has expired.
 */
export async function sessionToken(ctx: ClientContext, req: Request): Promise<TokenState | undefined> {
  const session = sessionOf(req);
  const token = getToken(req, ctx.now());
  const refreshToken = session.netauth?.refresh_token;
  if (!token || refreshToken === undefined || token.expires_at === undefined || token.expires_at - ctx.now() > refreshBefore(ctx)) return token;
  let response: oidc.TokenEndpointResponse;
  try {
    response = await refreshTokens(ctx, refreshToken);
  } catch (error) {
    if (error instanceof NetAuthClientError && error.kind === 'token_expired') {
      if (session.netauth?.refresh_token === refreshToken) delete session.netauth.refresh_token;
      await promisify((cb) => session.save(cb));
    } else if (token.expired) {
      throw error;
    }
    return getToken(req, ctx.now());
  }
  const now = ctx.now();
  session.netauth = {
    ...session.netauth,
    token: {
      access_token: response.access_token,
      token_type: response.token_type,
      expires_at: response.expires_in === undefined ? undefined : now + response.expires_in * 1000,
      // RFC 6749 §5.1: no scope in the answer means the one asked for, here the grant's.
      scope: response.scope ?? token.scope,
      data: token.data,
    },
    // RFC 6749 §6 lets a gateway keep the refresh token as it is.
    refresh_token: response.refresh_token ?? refreshToken,
  };
  await promisify((cb) => session.save(cb));
  return getToken(req, now);
}

/**
 * `fetch` for service-API calls on behalf of the session: adds `Authorization: Bearer` with the session's token
 * (refreshed first when due), and fails with a typed `no_token` / `token_expired` error instead of sending a
 * request that can only be refused.
 */
export async function serviceFetch(ctx: ClientContext, req: Request, input: string | URL, init: RequestInit = {}): Promise<Response> {
  await sessionToken(ctx, req);
  const token = liveToken(req, ctx.now());
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${token.access_token}`);
  return fetch(input, { ...init, headers });
}

/**
 * A backend-flow token's refresh: a new token with the rotated refresh token (keep it in place of the old one,
 * which is then spent). `token_expired` when the gateway refused it: start a new flow.
 */
export async function refreshBackchannelToken(ctx: ClientContext, token: BackchannelToken): Promise<BackchannelToken> {
  if (token.refresh_token === undefined) {
    throw new NetAuthClientError('no_token', 'this token has no refresh token: the gateway issues one only for offline_access to a client registered for refresh_token');
  }
  const response = await refreshTokens(ctx, token.refresh_token);
  const refreshed = backchannelToken(ctx, response, token.scope);
  return refreshed.refresh_token === undefined ? { ...refreshed, refresh_token: token.refresh_token } : refreshed;
}
