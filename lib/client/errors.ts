import * as oidc from 'openid-client';

/**
 * What went wrong on the application side, as one type the application's error handler can branch on.
 * `error` and `description` carry the gateway's OAuth error when there was one. The status tells the truth:
 * 4xx when the request or the callback was at fault, 500 when this application is misconfigured, 502 / 503
 * only when the gateway failed.
 */
export type NetAuthClientErrorKind =
  /** The subscriber (or the operator's policy) refused: `access_denied`, or the gateway granted less than the route requires. */
  | 'denied'
  /** `consent_required` / `login_required` (with `prompt=none`). */
  | 'consent_required'
  /** The device is not on the operator's mobile network (WiFi, tethering), so the subscriber was not identified. */
  | 'not_on_mobile_network'
  /** The callback's `state` is missing or is not the one this session sent (CSRF, replay, a second tab). */
  | 'state_mismatch'
  /**
   * The callback is not a usable answer of this gateway: another issuer's `iss` or none where the gateway
   * promises it (RFC 9207), no code, a repeated parameter, or a code the gateway refused (`invalid_grant`:
   * unknown, used, expired, injected). Nothing was stored; start again.
   */
  | 'invalid_callback'
  /** The backend flow's login_hint names no subscriber of this operator (`unknown_user_id`). */
  | 'unknown_subscriber'
  /**
   * The gateway refused the request as sent (`invalid_scope`, `invalid_request`, `invalid_request_object`,
   * an unknown or used `auth_req_id` …): check what was asked for.
   */
  | 'authorization_error'
  /**
   * This application's configuration cannot work: express-session is not mounted, the gateway refused the
   * client's credentials or registration (`invalid_client`, `unauthorized_client`), or the discovered
   * metadata is not the configured gateway's.
   */
  | 'misconfigured'
  /** The gateway failed: an error it should not have given (`server_error`) or a response that fails validation. */
  | 'token_error'
  /** The backend-flow request expired before it was approved (`expired_token`). */
  | 'expired'
  /** The session holds no token. */
  | 'no_token'
  /** The session's token has expired: start the flow again. */
  | 'token_expired'
  /** The gateway (or the session store) could not be reached, or answered 503; from `fetch()`: the service API did not answer. */
  | 'unavailable'
  /** The caller's AbortSignal fired. */
  | 'aborted';

/**
 * The stable code of each kind, in the scheme of the package's other errors (`NETAUTH_…`): `kind` in upper
 * case after `NETAUTH_APP_`, e.g. `NETAUTH_APP_STATE_MISMATCH`.
 */
export type NetAuthClientErrorCode = `NETAUTH_APP_${Uppercase<NetAuthClientErrorKind>}`;

export class NetAuthClientError extends Error {
  readonly kind: NetAuthClientErrorKind;
  /** Stable identifier for handlers and logs, derived from `kind`; the message may change. */
  readonly code: NetAuthClientErrorCode;
  /** The gateway's OAuth error code, when there was one. */
  readonly error: string | undefined;
  readonly description: string | undefined;
  /** HTTP status the application may answer with. */
  readonly status: number;

  /** `cause` is kept only as a sanitized copy (see `sanitized`): no token, code or assertion can ride along. */
  constructor(
    kind: NetAuthClientErrorKind,
    message: string,
    details: { error?: string; description?: string; status?: number; cause?: unknown } = {},
  ) {
    const cause = sanitized(details.cause);
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'NetAuthClientError';
    this.kind = kind;
    this.code = `NETAUTH_APP_${kind.toUpperCase() as Uppercase<NetAuthClientErrorKind>}`;
    this.error = details.error;
    this.description = details.description;
    this.status = details.status ?? STATUS[kind];
  }
}

const STATUS: Record<NetAuthClientErrorKind, number> = {
  denied: 403,
  consent_required: 403,
  not_on_mobile_network: 403,
  state_mismatch: 400,
  invalid_callback: 400,
  unknown_subscriber: 404,
  authorization_error: 400,
  misconfigured: 500,
  token_error: 502,
  expired: 408,
  no_token: 401,
  token_expired: 401,
  unavailable: 503,
  aborted: 499,
};

/** The fields of openid-client's and Node's errors that describe what happened without carrying data. */
const SAFE_FIELDS = ['code', 'error', 'error_description', 'status', 'errno', 'syscall'] as const;

/**
 * A copy of an error chain that keeps what explains it (name, message, stack, OAuth `error` and `status`,
 * Node's `code`) and drops everything else. openid-client's errors hold the response and its parsed body
 * (`ResponseBodyError.cause` is the token response, access token included), the callback's parameters
 * (`AuthorizationResponseError.cause` holds the code), or the metadata: none of that may reach a log.
 * Non-Error causes are dropped; openid-client's messages are fixed strings.
 */
export function sanitized(error: unknown, depth = 0): Error | undefined {
  if (!(error instanceof Error) || depth > 5) return undefined;
  if (error instanceof NetAuthClientError) return error;
  const cause = sanitized(error.cause, depth + 1);
  const copy = new Error(error.message, cause === undefined ? undefined : { cause });
  copy.name = error.name;
  if (error.stack !== undefined) copy.stack = error.stack;
  const source = error as unknown as Record<string, unknown>;
  const target = copy as unknown as Record<string, unknown>;
  for (const field of SAFE_FIELDS) {
    const value = source[field];
    if (typeof value === 'string' || typeof value === 'number') target[field] = value;
  }
  return copy;
}

/** The gateway's description when the network could not identify the subscriber (docs/protocol.md, frontend step 3). */
const NOT_ON_MOBILE_NETWORK = /not identified by the mobile network/i;

/** Errors that say this client's credentials or registration are wrong, not the request. */
// invalid_dpop_proof: the gateway wants DPoP proofs of this client (dpop_bound_access_tokens) and the `dpop` option is off.
const CLIENT_CONFIGURATION = new Set([
  'invalid_client',
  'unauthorized_client',
  'unsupported_grant_type',
  'unsupported_response_type',
  'request_uri_not_supported',
  'request_not_supported',
  'invalid_dpop_proof',
]);
/** Errors that say the request as sent was refused. */
const BAD_REQUEST = new Set([
  'invalid_request',
  'invalid_scope',
  'invalid_grant',
  'invalid_request_object',
  'invalid_binding_message',
  'invalid_target',
  'invalid_authorization_details',
]);

/**
 * The message with the gateway's `error_description`, which often names the fix (a wrong client authentication
 * method, a missing scope): what a log line of `error.message` should show. Cut short: it came over the wire.
 */
function described(message: string, description: string | undefined): string {
  if (description === undefined || description === '') return message;
  return `${message} (the gateway says: ${description.length > 300 ? `${description.slice(0, 300)}…` : description})`;
}

/** Classifies an OAuth error the gateway returned, in a redirect or a JSON body. Unknown codes: the gateway failed. */
export function fromOAuthError(error: string, description: string | undefined, cause?: unknown): NetAuthClientError {
  const details = { error, ...(description === undefined ? {} : { description }), cause };
  const made = (kind: NetAuthClientErrorKind, message: string) =>
    new NetAuthClientError(kind, described(message, description), details);
  switch (error) {
    case 'access_denied':
      return description !== undefined && NOT_ON_MOBILE_NETWORK.test(description)
        ? made('not_on_mobile_network', 'the device is not on the operator mobile network')
        : made('denied', 'the subscriber or the operator denied the request');
    case 'consent_required':
    case 'login_required':
    case 'interaction_required':
      return made('consent_required', 'consent is required and was not given');
    case 'expired_token':
      return made('expired', 'the authorization request expired before it was approved');
    case 'unknown_user_id':
      return made('unknown_subscriber', 'no subscriber of the operator is known by this login_hint');
    case 'temporarily_unavailable':
      return made('unavailable', 'the gateway is temporarily unavailable');
  }
  if (CLIENT_CONFIGURATION.has(error)) return made('misconfigured', `the gateway refused this client: ${error}`);
  if (BAD_REQUEST.has(error)) return made('authorization_error', `the gateway refused the request: ${error}`);
  return made('token_error', `the gateway answered ${error}`);
}

/** Turns what openid-client (or fetch) threw at a gateway endpoint into a NetAuthClientError. */
export function fromOpenIdClientError(error: unknown): NetAuthClientError {
  if (error instanceof NetAuthClientError) return error;
  if (error instanceof oidc.ResponseBodyError || error instanceof oidc.AuthorizationResponseError) {
    if (error instanceof oidc.ResponseBodyError && error.status === 503)
      return fromOAuthError('temporarily_unavailable', error.error_description, error);
    return fromOAuthError(error.error, error.error_description, error);
  }
  if (error instanceof oidc.WWWAuthenticateChallengeError) {
    // openid-client reads no body when a 401 carries WWW-Authenticate; at the token endpoints a 401 is invalid_client (RFC 6749 §5.2).
    const code = error.cause[0]?.parameters.error ?? (error.status === 401 ? 'invalid_client' : 'server_error');
    return fromOAuthError(code, error.cause[0]?.parameters.error_description, error);
  }
  if (error instanceof Error && error.name === 'AbortError')
    return new NetAuthClientError('aborted', 'aborted', { cause: error });
  if (error instanceof Error && error.name === 'TimeoutError')
    return new NetAuthClientError('unavailable', 'the gateway did not answer in time', { cause: error });
  if (error instanceof TypeError && /fetch failed/i.test(error.message)) {
    return new NetAuthClientError('unavailable', 'the gateway could not be reached', { cause: error });
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'OAUTH_HTTP_REQUEST_FORBIDDEN' || code === 'OAUTH_REQUEST_PROTOCOL_FORBIDDEN') {
    return new NetAuthClientError(
      'misconfigured',
      'the gateway is not on https: (allowInsecureRequests is for development only)',
      { cause: error },
    );
  }
  if (code === 'OAUTH_MISSING_SERVER_METADATA' || code === 'OAUTH_INVALID_SERVER_METADATA') {
    return new NetAuthClientError('misconfigured', 'the gateway metadata lacks an endpoint this call needs', {
      cause: error,
    });
  }
  return new NetAuthClientError('token_error', 'the gateway answered something this client cannot accept', {
    cause: error,
  });
}
