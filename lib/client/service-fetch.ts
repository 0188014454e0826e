import type { Request } from 'express';
import * as oidc from 'openid-client';
import { withSignal, type ClientContext } from './configuration.js';
import { NetAuthClientError, fromOpenIdClientError } from './errors.js';
import { liveToken } from './session.js';

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
 * `fetch` for service-API calls: with the session's token (`from` is the request; a typed `no_token` /
 * `token_expired` error instead of sending a request that can only be refused) or with a token given (the
 * backend flow's). A Bearer token goes in `Authorization: Bearer`. A DPoP-bound one goes through openid-client's
 * `fetchProtectedResource`, which adds `Authorization: DPoP` and a fresh proof for this method and URL; the
 * service API's answer is returned as it came, a 401 with its challenge included (redirects are not followed:
 * a proof names one URL).
 */
export async function serviceFetch(ctx: ClientContext, from: Request | ServiceToken, input: string | URL, init: RequestInit = {}): Promise<Response> {
  const token = isServiceToken(from) ? from : liveToken(from, ctx.now());
  if (token.token_type.toLowerCase() !== 'dpop') {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${token.access_token}`);
    return fetch(input, { ...init, headers });
  }
  const { config, dpop } = await ctx.load();
  if (!dpop) throw new NetAuthClientError('misconfigured', 'the token is DPoP-bound but this client holds no DPoP key: set the client option dpop');
  // The method, headers (a content-type for a FormData or URLSearchParams body) and body bytes as fetch would send them.
  const request = new Request(input, init);
  const body = request.body === null ? undefined : await request.arrayBuffer();
  const call = () => oidc.fetchProtectedResource(config, token.access_token, new URL(request.url), request.method, body, request.headers, { DPoP: dpop });
  try {
    return await (init.signal ? withSignal.run(init.signal, call) : call());
  } catch (cause) {
    // A 401 or 403 with a challenge is the service API's answer, for the application to read.
    if (cause instanceof oidc.WWWAuthenticateChallengeError) return cause.response;
    if (init.signal?.aborted) throw new NetAuthClientError('aborted', 'the service-API call was aborted', { cause });
    throw fromOpenIdClientError(cause);
  }
}
