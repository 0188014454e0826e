import type { Request } from 'express';
import type { OAuthError } from '../../errors.js';
import type { RateLimitedEvent } from '../../ops/events.js';
import type { JWTPayload } from 'jose';
import type { RegisteredClient, GrantType } from '../../registry/clients.js';
import type { GatewayContext } from '../context.js';
import type { FormParams } from '../http/form.js';
import type { IssueOptions, TokenResponse } from '../tokens/access-tokens.js';

/**
 * What the token endpoint settled for this request before handing over: the DPoP key the token is bound to, the
 * same for every grant, which a grant passes to `issueAccessToken` (adding its refresh token, if any); and the JWT
 * bearer grant's assertion when it authenticated the client (its verified claims: the grant does not verify it again).
 */
export interface ExchangeOptions extends IssueOptions {
  assertion?: JWTPayload | undefined;
}

/**
 * One grant type of the token endpoint, as a small pluggable module (after oauth2orize's exchanges):
 * the endpoint authenticates the client and checks it may use the grant, then hands over.
 */
export interface Grant {
  type: GrantType;
  exchange(
    ctx: GatewayContext,
    client: RegisteredClient,
    params: FormParams,
    req: Request,
    options: ExchangeOptions,
  ): Promise<TokenResponse>;
  /**
   * The answer to a request of this grant over the client's token limit (or its DPoP key's), reported as the
   * grant sees fit; without it, 429 with Retry-After (reported as `rate.limited`).
   */
  overClientLimit?(ctx: GatewayContext, event: RateLimitedEvent): OAuthError;
}
