import type { Request } from 'express';
import * as oidc from 'openid-client';
import { dpopOption, withSignal, type ClientContext } from './configuration.js';
import { NetAuthClientError, fromOpenIdClientError } from './errors.js';
import { getToken, liveToken, promisify, sessionOf, sessionTokenOf, type TokenState } from './session.js';
import { backchannelToken, type BackchannelToken } from './backchannel.js';
import { CLIENT_DEFAULTS } from '../defaults.js';

/**
 * Tokens at the time of use: `fetch()` to a service API, with the session's token refreshed first when it is
 * about to expire, and the refresh itself.
 *
 * Refresh tokens (RFC 6749 §6; the CAMARA profile's `offline_access`), used before the access token expires:
 * the session's token in `requireToken()` and `fetch()`, a backend-flow token with `refresh()`. The gateway
 * rotates the refresh token at every use and revokes the whole grant when a rotated-out one comes back (RFC 9700
 * §4.14.2), so a refresh token is presented at most once from this process: concurrent refreshes of one token
 * share one request, and its result is kept a short while for requests that read the session just before it
 * was saved.
 */

/** How long a refresh's result stays shared after it arrived (ms): longer than any request takes to reach its refresh. */
const SHARED_FOR = 60_000;

/** A token response and when it arrived (the client's clock): every sharer computes the same `expires_at`. */
interface Refreshed {
  response: oidc.TokenEndpointResponse;
  receivedAt: number;
}

interface Shared {
  promise: Promise<Refreshed>;
  /** Epoch ms (real time) after which the result is no longer handed out; Infinity while the request is in flight. */
  until: number;
}

/** Per client (one NetAuthClient's context), by refresh token. */
const sharedByClient = new WeakMap<ClientContext, Map<string, Shared>>();

/** A refresh the gateway refused (`invalid_grant`): the grant is over, a new flow is needed, as after expiry. */
function refused(cause: unknown): NetAuthClientError {
  return new NetAuthClientError(
    'token_expired',
    'the gateway refused the refresh token (expired, revoked, or consent withdrawn): start a new flow',
    {
      error: 'invalid_grant',
      cause,
    },
  );
}

/**
 * A shared refresh's result, followed along later refreshes of the tokens it gave (a request that read the
 * session long ago must not bring back a refresh token that was rotated since).
 */
async function latest(shared: Map<string, Shared>, first: Promise<Refreshed>): Promise<Refreshed> {
  let refreshed = await first;
  for (let hops = 0; hops < 10; hops++) {
    const token = refreshed.response.refresh_token;
    const next = token === undefined ? undefined : shared.get(token);
    if (!next) break;
    try {
      refreshed = await next.promise;
    } catch {
      break;
    }
  }
  return refreshed;
}

/** One refresh_token grant per refresh token at a time; errors typed (`token_expired` when refused). */
function refreshTokens(ctx: ClientContext, refreshToken: string): Promise<Refreshed> {
  let shared = sharedByClient.get(ctx);
  if (!shared) {
    shared = new Map();
    sharedByClient.set(ctx, shared);
  }
  const now = Date.now();
  for (const [key, entry] of shared) if (entry.until <= now) shared.delete(key);
  const found = shared.get(refreshToken);
  if (found) return latest(shared, found.promise);
  const entry: Shared = {
    until: Infinity,
    promise: (async () => {
      try {
        // With the client's DPoP key, if it has one: a DPoP-bound grant's next token is bound too (RFC 9449 §5).
        const { config, dpop } = await ctx.load();
        const response = await oidc.refreshTokenGrant(config, refreshToken, undefined, dpopOption(dpop));
        return { response, receivedAt: ctx.now() };
      } catch (cause) {
        throw cause instanceof oidc.ResponseBodyError && cause.error === 'invalid_grant'
          ? refused(cause)
          : fromOpenIdClientError(cause);
      }
    })(),
  };
  shared.set(refreshToken, entry);
  entry.promise.then(
    () => {
      entry.until = Date.now() + SHARED_FOR;
    },
    // A failure is not shared afterwards: a later request may try again (the gateway may be back).
    () => void shared.delete(refreshToken),
  );
  return entry.promise;
}

function refreshBefore(ctx: ClientContext): number {
  return (ctx.options.refreshBeforeExpiry ?? CLIENT_DEFAULTS.refreshBeforeExpiry) * 1000;
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
  if (
    !token ||
    refreshToken === undefined ||
    token.expires_at === undefined ||
    token.expires_at - ctx.now() > refreshBefore(ctx)
  )
    return token;
  let refreshed: Refreshed;
  try {
    refreshed = await refreshTokens(ctx, refreshToken);
  } catch (error) {
    if (error instanceof NetAuthClientError && error.kind === 'token_expired') {
      if (session.netauth?.refresh_token === refreshToken) delete session.netauth.refresh_token;
      await promisify((cb) => session.save(cb));
    } else if (token.expired) {
      throw error;
    }
    return getToken(req, ctx.now());
  }
  const { response, receivedAt } = refreshed;
  session.netauth = {
    ...session.netauth,
    // No scope in the answer: the grant's, the one the refresh asked for.
    token: sessionTokenOf(response, receivedAt, token.scope, token.data),
    // RFC 6749 §6 lets a gateway keep the refresh token as it is.
    refresh_token: response.refresh_token ?? refreshToken,
  };
  await promisify((cb) => session.save(cb));
  return getToken(req, ctx.now());
}

/** A token to call a service API with: the backend flow's, or any other the application holds. */
export interface ServiceToken {
  access_token: string;
  /** `Bearer`, or `DPoP` for a token bound to the client's DPoP key (compared without case: openid-client lower-cases it). */
  token_type: string;
}

function isServiceToken(from: Request | ServiceToken): from is ServiceToken {
  return typeof (from as Partial<ServiceToken>).access_token === 'string';
}

/**
 * `fetch` for service-API calls: with the session's token (`from` is the request: refreshed first when due, and
 * a typed `no_token` / `token_expired` error instead of sending a request that can only be refused) or with a
 * token given (the backend flow's). A Bearer token goes in `Authorization: Bearer`. A DPoP-bound one goes through
 * openid-client's `fetchProtectedResource`, which adds `Authorization: DPoP` and a fresh proof for this method
 * and URL; the service API's answer is returned as it came, a 401 with its challenge included (redirects are not
 * followed: a proof names one URL).
 */
export async function serviceFetch(
  ctx: ClientContext,
  from: Request | ServiceToken,
  input: string | URL,
  init: RequestInit = {},
): Promise<Response> {
  let token: ServiceToken;
  if (isServiceToken(from)) {
    token = from;
  } else {
    await sessionToken(ctx, from);
    token = liveToken(from, ctx.now());
  }
  if (token.token_type.toLowerCase() !== 'dpop') {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${token.access_token}`);
    try {
      return await fetch(input, { ...init, headers });
    } catch (cause) {
      // An invalid URL or init is the caller's bug, thrown as fetch throws it; the call's failures are typed.
      throw serviceCallFailed(cause, init.signal) ?? cause;
    }
  }
  const { config, dpop } = await ctx.load();
  if (!dpop)
    throw new NetAuthClientError(
      'misconfigured',
      'the token is DPoP-bound but this client holds no DPoP key: set the client option dpop',
    );
  // The method, headers (a content-type for a FormData or URLSearchParams body) and body bytes as fetch would send them.
  const request = new Request(input, init);
  const body = request.body === null ? undefined : await request.arrayBuffer();
  const call = () =>
    oidc.fetchProtectedResource(
      config,
      token.access_token,
      new URL(request.url),
      request.method,
      body,
      request.headers,
      { DPoP: dpop },
    );
  try {
    return await (init.signal ? withSignal.run(init.signal, call) : call());
  } catch (cause) {
    // A 401 or 403 with a challenge is the service API's answer, for the application to read.
    if (cause instanceof oidc.WWWAuthenticateChallengeError) return cause.response;
    throw serviceCallFailed(cause, init.signal) ?? fromOpenIdClientError(cause);
  }
}

/**
 * A service-API call that did not get an answer, the same for Bearer and DPoP tokens: `aborted` when the caller's
 * signal fired, `unavailable` when the service API could not be reached or did not answer in time (fetch's
 * `TypeError: fetch failed`, a `TimeoutError` of `AbortSignal.timeout()`). Undefined for anything else.
 */
function serviceCallFailed(cause: unknown, signal: AbortSignal | null | undefined): NetAuthClientError | undefined {
  const name = cause instanceof Error ? cause.name : undefined;
  if (name === 'TimeoutError')
    return new NetAuthClientError('unavailable', 'the service API did not answer in time', { cause });
  if (signal?.aborted || name === 'AbortError')
    return new NetAuthClientError('aborted', 'the service-API call was aborted', { cause });
  if (cause instanceof TypeError && /fetch failed/i.test(cause.message))
    return new NetAuthClientError('unavailable', 'the service API could not be reached', { cause });
  return undefined;
}

/**
 * A backend-flow token's refresh: a new token with the rotated refresh token (keep it in place of the old one,
 * which is then spent). `token_expired` when the gateway refused it: start a new flow.
 */
export async function refreshBackchannelToken(ctx: ClientContext, token: BackchannelToken): Promise<BackchannelToken> {
  if (token.refresh_token === undefined) {
    throw new NetAuthClientError(
      'no_token',
      'this token has no refresh token: the gateway issues one only for offline_access to a client registered for refresh_token',
    );
  }
  const { response, receivedAt } = await refreshTokens(ctx, token.refresh_token);
  const refreshed = backchannelToken(ctx, response, token.scope, receivedAt);
  return refreshed.refresh_token === undefined ? { ...refreshed, refresh_token: token.refresh_token } : refreshed;
}
