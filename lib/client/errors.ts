/**
 * What went wrong on the application side, as one type the application's error handler can branch on.
 * `error` and `description` carry the gateway's OAuth error when there was one.
 */
export type NetAuthClientErrorKind =
  /** The subscriber (or the operator's policy) refused: `access_denied`. */
  | 'denied'
  /** `consent_required` / `login_required` (with `prompt=none`). */
  | 'consent_required'
  /** The device is not on the operator's mobile network (WiFi, tethering), so the subscriber was not identified. */
  | 'not_on_mobile_network'
  /** The callback's `state` is missing or is not the one this session sent (CSRF, replay, a second tab). */
  | 'state_mismatch'
  /** The backend flow's login_hint names no subscriber of this operator (`unknown_user_id`). */
  | 'unknown_subscriber'
  /** Any other error in the authorization response (`invalid_scope`, `invalid_request`, …). */
  | 'authorization_error'
  /** The token endpoint refused (`invalid_grant`, `invalid_client`, …) or answered something invalid. */
  | 'token_error'
  /** The backend-flow request expired before it was approved (`expired_token`). */
  | 'expired'
  /** The session holds no token. */
  | 'no_token'
  /** The session's token has expired: start the flow again. */
  | 'token_expired'
  /** The gateway could not be reached or answered 503. */
  | 'unavailable'
  /** The caller's AbortSignal fired. */
  | 'aborted';

export class NetAuthClientError extends Error {
  readonly kind: NetAuthClientErrorKind;
  /** The gateway's OAuth error code, when there was one. */
  readonly error: string | undefined;
  readonly description: string | undefined;
  /** HTTP status the application may answer with. */
  readonly status: number;

  constructor(kind: NetAuthClientErrorKind, message: string, details: { error?: string; description?: string; status?: number; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'NetAuthClientError';
    this.kind = kind;
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
  unknown_subscriber: 404,
  authorization_error: 400,
  token_error: 502,
  expired: 408,
  no_token: 401,
  token_expired: 401,
  unavailable: 503,
  aborted: 499,
};

/** The gateway's description when the network could not identify the subscriber (docs/protocol.md, frontend step 3). */
const NOT_ON_MOBILE_NETWORK = /not identified by the mobile network/i;

/**
 * Classifies an OAuth error the gateway returned, in a redirect or a JSON body. Codes without a kind of
 * their own become `fallback`: `authorization_error` for the authorization response, `token_error` for the
 * token and bc-authorize endpoints.
 */
export function fromOAuthError(
  error: string,
  description: string | undefined,
  cause?: unknown,
  fallback: 'authorization_error' | 'token_error' = 'authorization_error',
): NetAuthClientError {
  const details = { error, ...(description === undefined ? {} : { description }), cause };
  switch (error) {
    case 'access_denied':
      return description !== undefined && NOT_ON_MOBILE_NETWORK.test(description)
        ? new NetAuthClientError('not_on_mobile_network', 'the device is not on the operator mobile network', details)
        : new NetAuthClientError('denied', 'the subscriber or the operator denied the request', details);
    case 'consent_required':
    case 'login_required':
      return new NetAuthClientError('consent_required', 'consent is required and was not given', details);
    case 'expired_token':
      return new NetAuthClientError('expired', 'the authorization request expired before it was approved', details);
    case 'unknown_user_id':
      return new NetAuthClientError('unknown_subscriber', 'no subscriber of the operator is known by this login_hint', details);
    case 'temporarily_unavailable':
      return new NetAuthClientError('unavailable', 'the gateway is temporarily unavailable', { ...details, status: 503 });
    default:
      return new NetAuthClientError(fallback, `the gateway answered ${error}`, details);
  }
}
