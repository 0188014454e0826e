import type { Request } from 'express';
import type { OAuthError } from '../../errors.js';
import type { RateLimitedEvent } from '../../ops/events.js';
import type { RegisteredClient, GrantType } from '../../registry/clients.js';
import type { GatewayContext } from '../context.js';
import type { FormParams } from '../http/form.js';
import type { IssueOptions, TokenResponse } from '../tokens/access-tokens.js';

/**
 * What the token endpoint settled for this request before handing over, the same for every grant (the DPoP key
 * the token is bound to): a grant passes it to `issueAccessToken` untouched (adding its refresh token, if any).
 */
export type ExchangeOptions = IssueOptions;

/**
 * One grant type of the token endpoint, as a small pluggable module (after oauth2orize's exchanges):
 * the endpoint authenticates the client and checks it may use the grant, then hands over.
 */
export interface Grant {
  type: GrantType;
  /**
   * Only for a grant whose request can authenticate the client by itself (RFC 7521 §4.1 and §6.3: the JWT bearer
   * assertion, as the CAMARA profile uses it): called instead of client authentication when the request carries
   * no client credentials. Resolves with the client, or rejects as client authentication would.
   */
  authenticate?(ctx: GatewayContext, params: FormParams, req: Request): Promise<RegisteredClient>;
  exchange(ctx: GatewayContext, client: RegisteredClient, params: FormParams, req: Request, options: ExchangeOptions): Promise<TokenResponse>;
  /**
   * The answer to a request of this grant over the client's token limit, reported as the grant sees fit;
   * without it, 429 with Retry-After (reported as `rate.limited`).
   */
  overClientLimit?(ctx: GatewayContext, event: RateLimitedEvent): OAuthError;
}
