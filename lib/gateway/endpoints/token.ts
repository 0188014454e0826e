import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import { CIBA_GRANT, type RegisteredClient } from '../../registry/clients.js';
import type { ClientAuthenticator } from '../client-auth/authenticator.js';
import type { GatewayContext } from '../context.js';
import { formParams, type FormParams } from '../http/form.js';
import type { Grant } from '../grants/grant.js';
import { cibaSlowDown } from '../grants/ciba.js';
import { overLimit } from '../../ops/rate-limits.js';
import { sendJson } from '../http/headers.js';
import { tokenRequestBinding } from '../tokens/dpop.js';

/**
 * POST /token: authenticates the client, checks a DPoP proof if one was sent (every grant alike: a valid one binds
 * whatever token the grant issues), then dispatches on grant_type to one grant module. A request with no client
 * credentials for a grant whose assertion authenticates the client (JWT bearer) is authenticated by it.
 */
export function tokenEndpoint(ctx: GatewayContext, auth: ClientAuthenticator, grants: readonly Grant[]) {
  const byType = new Map(grants.map((g) => [g.type as string, g]));
  const authenticate = (req: Request, res: Response, params: FormParams): Promise<RegisteredClient> => {
    const self = auth.presents(req, params) ? undefined : byType.get(params.get('grant_type') ?? '');
    return self?.authenticate ? self.authenticate(ctx, params, req) : auth.authenticate(req, res, params, 'token');
  };
  return async (req: Request, res: Response): Promise<void> => {
    const params = formParams(req);
    const client = await authenticate(req, res, params);
    const retryAfter = await ctx.limits?.client('token', client.clientId);
    const grantType = params.require('grant_type');
    const grant = byType.get(grantType);
    if (!grant) throw new OAuthError('unsupported_grant_type', 'this grant_type is not supported');
    if (!client.grantTypes.includes(grant.type)) {
      throw new OAuthError('unauthorized_client', 'the client is not registered for this grant type');
    }
    if (retryAfter !== undefined) {
      const event = { endpoint: 'token', limit: 'client', clientId: client.clientId, retryAfter } as const;
      // A CIBA poll over the limit is told to poll slower (CIBA Core §11), which pollers follow; a 429 would end its polling.
      throw grant.type === CIBA_GRANT ? cibaSlowDown(ctx, event) : overLimit(ctx.events, event);
    }
    const dpopJkt = await tokenRequestBinding(ctx, req, client);
    sendJson(res, 200, await grant.exchange(ctx, client, params, req, { dpopJkt }));
  };
}
