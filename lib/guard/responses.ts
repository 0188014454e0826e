import type { Response } from 'express';
import type { OAuthError } from '../errors.js';
import { authChallenge, sendGuardError } from '../gateway/http/render-error.js';

/** How the guard's refusals read: RFC 6750 (`{error, error_description}`) or CAMARA Commonalities (`{status, code, message}`). */
export type GuardErrorFormat = 'oauth' | 'camara';

/** The scheme an access token was presented with. */
export type AuthScheme = 'Bearer' | 'DPoP';

/** CAMARA Commonalities' `ErrorInfo` (API Design Guide §3.2; the codes of CAMARA_common.yaml). */
export interface CamaraErrorInfo {
  status: number;
  code: string;
  message: string;
}

export function camaraError(status: number, code: string, message: string): CamaraErrorInfo {
  return { status, code, message };
}

/** Commonalities §3.2.1, NOTE 1: whatever failed in authentication, the one generic 401. */
const UNAUTHENTICATED = camaraError(
  401,
  'UNAUTHENTICATED',
  'Request not authenticated due to missing, invalid, or expired credentials. A new authentication is required.',
);

/** The Commonalities error for one of the guard's OAuth errors (the `WWW-Authenticate` challenges keep the detail). */
export function camaraErrorOf(error: OAuthError | undefined): CamaraErrorInfo {
  // A malformed Authorization header is also no authentication (NOTE 1): 401, not 400.
  if (error === undefined || error.status === 401 || error.code === 'invalid_request') return UNAUTHENTICATED;
  if (error.code === 'insufficient_scope')
    return camaraError(403, 'PERMISSION_DENIED', 'Client does not have sufficient permissions to perform this action.');
  if (error.status === 429) return camaraError(429, 'TOO_MANY_REQUESTS', 'Rate limit reached.');
  if (error.status === 503) return camaraError(503, 'UNAVAILABLE', 'Service Unavailable.');
  return camaraError(500, 'INTERNAL', 'Unknown server error. Typically a server bug.');
}

export interface ChallengeOptions {
  realm: string;
  /** The API scopes the route needs, space separated (RFC 6750 §3 `scope`). */
  scope: string | undefined;
  /** RFC 9449 §7.1 `algs`: the DPoP proof algorithms accepted. */
  algs: readonly string[];
}

/**
 * The guard's answers when it refuses a request. A route accepts both schemes, so both challenges are sent
 * (RFC 9449 §7.1, §7.2): the error goes in the challenge of the scheme the token came with (Bearer when none
 * came), and `invalid_dpop_proof` always in the DPoP one. The body is in the route's `errorFormat`.
 */
export class GuardResponses {
  private readonly algs: string;

  constructor(
    private readonly format: GuardErrorFormat,
    private readonly challenge: ChallengeOptions,
  ) {
    this.algs = challenge.algs.join(' ');
  }

  /** An authentication or authorization failure (`undefined`: no credentials at all). */
  refuse(res: Response, error: OAuthError | undefined, scheme: AuthScheme | undefined): void {
    const info = this.format === 'camara' ? camaraErrorOf(error) : undefined;
    const status = info?.status ?? error?.status ?? 401;
    // A server failure or a rate limit is no authentication problem: no challenge.
    const challenges = status >= 500 || status === 429 ? [] : this.challenges(error, scheme);
    sendGuardError(res, status, challenges, error, info ?? error?.toJSON());
  }

  /** A refusal of the request's content, after authentication (device identification, x-correlator): no challenge. */
  fail(res: Response, info: CamaraErrorInfo): void {
    sendGuardError(res, info.status, [], undefined, info);
  }

  private challenges(error: OAuthError | undefined, scheme: AuthScheme | undefined): string[] {
    const { realm, scope } = this.challenge;
    const inDpop = error !== undefined && (scheme === 'DPoP' || error.code === 'invalid_dpop_proof');
    return [
      authChallenge('Bearer', realm, inDpop ? undefined : error, { scope }),
      authChallenge('DPoP', realm, inDpop ? error : undefined, { scope, algs: this.algs }),
    ];
  }
}
