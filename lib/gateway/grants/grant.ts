import type { Request } from 'express';
import type { RegisteredClient, GrantType } from '../../registry/clients.js';
import type { GatewayContext } from '../context.js';
import type { FormParams } from '../http/form.js';
import type { IssueOptions, TokenResponse } from '../tokens/access-tokens.js';

/**
 * What the token endpoint settled for this request before handing over, the same for every grant (the DPoP key
 * the token is bound to): a grant passes it to `issueAccessToken` untouched.
 */
export type ExchangeOptions = IssueOptions;

/**
 * One grant type of the token endpoint, as a small pluggable module (after oauth2orize's exchanges):
 * the endpoint authenticates the client and checks it may use the grant, then hands over.
 */
export interface Grant {
  type: GrantType;
  exchange(ctx: GatewayContext, client: RegisteredClient, params: FormParams, req: Request, options: ExchangeOptions): Promise<TokenResponse>;
}
