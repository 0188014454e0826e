import type { Request } from 'express';
import type { RegisteredClient, GrantType } from '../../registry/clients.js';
import type { GatewayContext } from '../context.js';
import type { FormParams } from '../http/form.js';
import type { TokenResponse } from '../tokens/access-tokens.js';

/**
 * One grant type of the token endpoint, as a small pluggable module (after oauth2orize's exchanges):
 * the endpoint authenticates the client and checks it may use the grant, then hands over.
 */
export interface Grant {
  type: GrantType;
  exchange(ctx: GatewayContext, client: RegisteredClient, params: FormParams, req: Request): Promise<TokenResponse>;
}
