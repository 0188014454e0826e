import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { audienceFor, dpopOption, type ClientContext, type ClientSigner } from './configuration.js';
import { NetAuthClientError, fromOpenIdClientError } from './errors.js';
import { checkRequestedScope } from './requested-scope.js';
import { expiryOf } from './session.js';
import { CLIENT_DEFAULTS } from '../defaults.js';

const CIBA_GRANT = 'urn:openid:params:grant-type:ciba';

export interface BackchannelParams {
  /** `tel:+<E.164>` or `ipport:…`. */
  login_hint: string;
  /** `dpv:<Purpose> <scope>…` (CAMARA) or `dpv:<Purpose>#<scope>`. */
  scope: string;
  /** Cancels the request and the polling. */
  signal?: AbortSignal;
  /** Told when the request is started (persist `request` to resume elsewhere) and after every unanswered poll. */
  onProgress?: (progress: BackchannelProgress) => void;
}

/**
 * A started backend-flow request: plain JSON, to keep in a job queue and poll or resume from any process
 * with the same client registration. It holds no phone number.
 */
export interface PendingBackchannel {
  auth_req_id: string;
  /** The requested scope (the token's scope when the gateway does not echo it). */
  scope: string;
  /** Seconds to wait between polls; grown by 5 after each `slow_down` (CIBA §7.3). */
  interval: number;
  expires_in: number;
  /** Epoch ms: `expires_in` counted from bc-authorize's answer. */
  expires_at: number;
}

export interface BackchannelProgress {
  status: 'started' | 'pending' | 'slow_down';
  request: PendingBackchannel;
  /** Polls sent so far. */
  polls: number;
}

/** One poll's outcome; errors (denied, expired, …) are thrown as NetAuthClientError. */
export type BackchannelPoll =
  | { status: 'approved'; token: BackchannelToken }
  | {
      status: 'pending';
      /** The request to poll next (its interval may have grown). */
      request: PendingBackchannel;
      /** Seconds to wait before the next poll: the interval, or a longer `Retry-After`. */
      retry_after: number;
      slow_down: boolean;
    };

export interface BackchannelToken {
  access_token: string;
  token_type: string;
  expires_in: number | undefined;
  /** Epoch ms; undefined when the gateway sent no `expires_in` (RFC 6749 §5.1: RECOMMENDED, not required). */
  expires_at: number | undefined;
  scope: string | undefined;
  /** The ID token, when `openid` was requested and the gateway issues them. */
  id_token?: string;
  /**
   * When the gateway issued one (`offline_access`): keep it as secret as a password. `client.refresh(token)`
   * uses it and returns the next token, with the rotated refresh token.
   */
  refresh_token?: string;
}

/** A token response as the backend flow hands it over; `scope` stands in when the gateway did not echo one (RFC 6749 §5.1). */
export function backchannelToken(
  ctx: ClientContext,
  tokens: oidc.TokenEndpointResponse,
  scope: string | undefined,
  receivedAt = ctx.now(),
): BackchannelToken {
  return {
    access_token: tokens.access_token,
    token_type: tokens.token_type,
    expires_in: tokens.expires_in,
    expires_at: expiryOf(tokens.expires_in, receivedAt),
    scope: tokens.scope ?? scope,
    ...(tokens.id_token === undefined ? {} : { id_token: tokens.id_token }),
    ...(tokens.refresh_token === undefined ? {} : { refresh_token: tokens.refresh_token }),
  };
}

/** The `request` parameter of a signed bc-authorize (CIBA Core §7.1.1; the CAMARA profile's claims, 60 s of life). */
async function signedRequest(
  config: oidc.Configuration,
  signer: ClientSigner,
  params: BackchannelParams,
): Promise<string> {
  // The gateway checks these against its own clock: the real time, not the injected one.
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({ login_hint: params.login_hint, scope: params.scope })
    .setProtectedHeader({ alg: signer.alg, typ: 'oauth-authz-req+jwt', ...(signer.kid ? { kid: signer.kid } : {}) })
    .setIssuer(config.clientMetadata().client_id)
    .setAudience(audienceFor(config, signer, 'backchannel_authentication_endpoint'))
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(iat + 60)
    .setJti(randomBytes(16).toString('base64url'))
    .sign(signer.key);
}

function aborted(cause?: unknown): NetAuthClientError {
  return new NetAuthClientError('aborted', 'the backend flow was aborted', { cause });
}

/** Step 1: bc-authorize. Resolves with the request to poll; the first poll is due `interval` seconds later. */
export async function startBackchannel(ctx: ClientContext, params: BackchannelParams): Promise<PendingBackchannel> {
  if (params.signal?.aborted) throw aborted();
  try {
    const { config, signer } = await ctx.load();
    checkRequestedScope(config, params.scope);
    const body: Record<string, string> = signer?.signRequests
      ? { request: await signedRequest(config, signer, params) }
      : { login_hint: params.login_hint, scope: params.scope };
    const started = await oidc.initiateBackchannelAuthentication(config, body);
    const interval = started.interval ?? CLIENT_DEFAULTS.pollInterval;
    return {
      auth_req_id: started.auth_req_id,
      scope: params.scope,
      interval,
      expires_in: started.expires_in,
      expires_at: ctx.now() + started.expires_in * 1000,
    };
  } catch (cause) {
    throw fromOpenIdClientError(cause);
  }
}

/** Seconds of an HTTP `Retry-After` (delta or date), if valid. */
function retryAfter(response: Response | undefined, now: number): number | undefined {
  const value = response?.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, Math.ceil((date - now) / 1000)) : undefined;
}

/**
 * Step 2: one token request. `authorization_pending`, `slow_down` (interval + 5 s) and a 503 with
 * `Retry-After` resolve as pending with the wait before the next poll; the rest throws, typed.
 */
export async function pollBackchannel(ctx: ClientContext, request: PendingBackchannel): Promise<BackchannelPoll> {
  if (ctx.now() >= request.expires_at)
    throw new NetAuthClientError('expired', 'the authorization request expired before it was approved');
  try {
    const { config, dpop } = await ctx.load();
    const tokens = await oidc.genericGrantRequest(
      config,
      CIBA_GRANT,
      { auth_req_id: request.auth_req_id },
      dpopOption(dpop),
    );
    return { status: 'approved', token: backchannelToken(ctx, tokens, request.scope) };
  } catch (cause) {
    const error = cause instanceof oidc.ResponseBodyError ? cause.error : undefined;
    // A JSON error carries its response; openid-client puts a non-JSON one (a proxy's 503 page) in `cause`.
    const inner = (cause as { cause?: unknown }).cause;
    const response =
      cause instanceof oidc.ResponseBodyError ? cause.response : inner instanceof Response ? inner : undefined;
    const after = retryAfter(response, Date.now());
    if (
      error === 'authorization_pending' ||
      error === 'slow_down' ||
      (response?.status === 503 && after !== undefined)
    ) {
      const interval = request.interval + (error === 'slow_down' ? 5 : 0);
      return {
        status: 'pending',
        request: { ...request, interval },
        retry_after: Math.max(interval, after ?? 0),
        slow_down: error === 'slow_down',
      };
    }
    throw fromOpenIdClientError(cause);
  }
}

/** Polls until the request is decided, waiting `interval` (or `Retry-After`) before each poll. */
export async function resumeBackchannel(
  ctx: ClientContext,
  request: PendingBackchannel,
  options: Pick<BackchannelParams, 'signal' | 'onProgress'> = {},
): Promise<BackchannelToken> {
  let current = request;
  let wait = request.interval;
  for (let polls = 1; ; polls++) {
    // No poll can be sent in time: the request will have expired (CIBA: polling sooner is slow_down).
    if (current.expires_at - ctx.now() <= wait * 1000)
      throw new NetAuthClientError('expired', 'the authorization request expired before it was approved');
    try {
      await ctx.sleep(wait * 1000, options.signal);
    } catch (cause) {
      throw aborted(cause);
    }
    // An injected sleep may resolve without heeding the signal: the caller asked to stop all the same.
    if (options.signal?.aborted) throw aborted(options.signal.reason);
    const result = await pollBackchannel(ctx, current);
    if (result.status === 'approved') return result.token;
    current = result.request;
    wait = result.retry_after;
    options.onProgress?.({ status: result.slow_down ? 'slow_down' : 'pending', request: current, polls });
  }
}

/** The one-call form: start, then resume until the request is decided. */
export async function runBackchannel(ctx: ClientContext, params: BackchannelParams): Promise<BackchannelToken> {
  const request = await startBackchannel(ctx, params);
  params.onProgress?.({ status: 'started', request, polls: 0 });
  return resumeBackchannel(ctx, request, params);
}
