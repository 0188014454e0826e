/**
 * The one error type of the package: an OAuth 2.0 / OIDC error that knows its wire code and HTTP status.
 * Everything that goes wrong for a request becomes one of these; `gateway/render-error.ts` is the one
 * place that turns it into a response (JSON body, redirect, error page or RFC 6750 challenge).
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'invalid_scope'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'access_denied'
  | 'consent_required'
  | 'login_required'
  | 'unknown_user_id'
  | 'invalid_request_object'
  | 'request_uri_not_supported'
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  | 'invalid_token'
  | 'insufficient_scope'
  /** RFC 9449 §5, §7.1: a DPoP proof is missing where one is required, or invalid. */
  | 'invalid_dpop_proof'
  | 'server_error'
  | 'temporarily_unavailable';

const DEFAULT_STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  invalid_scope: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  unsupported_response_type: 400,
  // 403 on bc-authorize (policy forbidden, sandbox line not allow-listed); the token endpoint
  // answers CIBA's access_denied with 400 as RFC 6749 §5.2 asks, by passing the status explicitly.
  access_denied: 403,
  consent_required: 400,
  login_required: 400,
  unknown_user_id: 400,
  invalid_request_object: 400,
  request_uri_not_supported: 400,
  authorization_pending: 400,
  slow_down: 400,
  expired_token: 400,
  invalid_token: 401,
  insufficient_scope: 403,
  // 400 at the token endpoint (RFC 9449 §5); the guard answers 401 with a DPoP challenge (§7.1).
  invalid_dpop_proof: 400,
  server_error: 500,
  temporarily_unavailable: 503,
};

export interface OAuthErrorOptions {
  /** HTTP status; defaults to the usual one for the code. */
  status?: number;
  /** Extra response headers (e.g. `Retry-After`). */
  headers?: Record<string, string>;
  /** What caused it, for logs and `onError`: the response carries only the code and its description. */
  cause?: unknown;
}

/**
 * RFC 6749 §4.1.2.1 and §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E. Descriptions that quote the
 * request (a bad scope, prompt or login_hint type) are made to fit: `"` becomes `'`, `\` becomes `/`, and
 * anything outside printable ASCII (control characters, unicode) becomes `?`. A description that quotes a
 * huge value is cut, so a redirect's Location header stays small enough for every proxy on the way.
 */
const MAX_DESCRIPTION = 200;

function wireDescription(text: string): string {
  const safe = text
    .replace(/"/g, "'")
    .replace(/\\/g, '/')
    .replace(/[^\x20-\x7e]/gu, '?');
  return safe.length <= MAX_DESCRIPTION ? safe : `${safe.slice(0, MAX_DESCRIPTION - 3)}...`;
}

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly description: string | undefined;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: OAuthErrorCode, rawDescription?: string, options: OAuthErrorOptions = {}) {
    const description = rawDescription === undefined ? undefined : wireDescription(rawDescription);
    super(
      description ? `${code}: ${description}` : code,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'OAuthError';
    this.code = code;
    this.description = description;
    this.status = options.status ?? DEFAULT_STATUS[code];
    this.headers = options.headers ?? {};
  }

  /** The RFC 6749 §5.2 body. */
  toJSON(): { error: OAuthErrorCode; error_description?: string } {
    return this.description === undefined
      ? { error: this.code }
      : { error: this.code, error_description: this.description };
  }
}

export function isOAuthError(value: unknown): value is OAuthError {
  return value instanceof OAuthError;
}
