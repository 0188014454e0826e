import * as oidc from 'openid-client';
import { NetAuthClientError } from './errors.js';
import { fromOpenIdClientError } from './configuration.js';

export interface BackchannelParams {
  /** `tel:+<E.164>` or `ipport:…`. */
  login_hint: string;
  /** `dpv:<Purpose>#<scope>`. */
  scope: string;
  /** Cancels the request and the polling. */
  signal?: AbortSignal;
}

export interface BackchannelToken {
  access_token: string;
  token_type: string;
  expires_in: number | undefined;
  scope: string | undefined;
  /** Epoch ms. */
  expires_at: number;
  /** The ID token, when `openid` was requested and the gateway issues them. */
  id_token?: string;
}

/**
 * The backend flow for server-side applications: bc-authorize, then polls the token endpoint until the
 * request is approved. openid-client does the polling: it waits `interval` before each poll, adds 5 s on
 * `slow_down`, honours `Retry-After`; this adds the `expires_in` deadline alongside the caller's signal.
 */
export async function runBackchannel(config: oidc.Configuration, params: BackchannelParams): Promise<BackchannelToken> {
  let started: oidc.BackchannelAuthenticationResponse;
  try {
    params.signal?.throwIfAborted();
    started = await oidc.initiateBackchannelAuthentication(config, { login_hint: params.login_hint, scope: params.scope });
  } catch (cause) {
    throw fromOpenIdClientError(cause);
  }
  const deadline = AbortSignal.timeout(started.expires_in * 1000);
  const signal = params.signal ? AbortSignal.any([params.signal, deadline]) : deadline;
  try {
    const tokens = await oidc.pollBackchannelAuthenticationGrant(config, started, undefined, { signal });
    return {
      access_token: tokens.access_token,
      token_type: tokens.token_type,
      expires_in: tokens.expires_in,
      scope: tokens.scope,
      expires_at: Date.now() + (tokens.expires_in ?? 0) * 1000,
      ...(tokens.id_token === undefined ? {} : { id_token: tokens.id_token }),
    };
  } catch (cause) {
    if (params.signal?.aborted) throw new NetAuthClientError('aborted', 'the backend flow was aborted', { cause });
    if (deadline.aborted) throw new NetAuthClientError('expired', 'the authorization request expired before it was approved', { cause });
    throw fromOpenIdClientError(cause);
  }
}
