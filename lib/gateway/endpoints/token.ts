import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import type { ClientAuthenticator } from '../client-auth/authenticator.js';
import type { RequestContext } from '../http/request-context.js';
import type { Grant, GrantCollaborators } from '../grants/grant.js';
import { overLimit } from '../../ops/rate-limits.js';
import type { RateLimitedEvent } from '../../ops/events.js';
import { sendJson } from '../http/respond.js';
import { dpopBindingAsked, tokenRequestBinding, type TokenRequestProofs } from '../tokens/dpop.js';

/** What the token endpoint uses: what its grants use, and what checking a DPoP proof uses. */
export interface TokenEndpointCollaborators extends GrantCollaborators, TokenRequestProofs {}

/**
 * POST /token: authenticates the client, checks a DPoP proof if one was sent (every grant alike: a valid one binds
 * whatever token the grant issues), then dispatches on grant_type to one grant module. A request with no client
 * credentials for the JWT bearer grant is authenticated by its assertion, whose verified claims go to the grant.
 */
export function tokenEndpoint(ctx: TokenEndpointCollaborators, auth: ClientAuthenticator, grants: readonly Grant[]) {
  const byType = new Map(grants.map((g) => [g.type as string, g]));
  return async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    const { params } = request;
    const { client, assertion } = await auth.authenticate(req, res, params, 'token');
    request.client = client;
    if (assertion !== undefined) request.assertion = assertion;
    const retryAfter = ctx.limits ? await ctx.limits.client('token', client.clientId) : undefined;
    const grantType = params.require('grant_type');
    const grant = byType.get(grantType);
    if (!grant) throw new OAuthError('unsupported_grant_type', 'this grant_type is not supported');
    if (!client.grantTypes.includes(grant.type)) {
      throw new OAuthError('unauthorized_client', 'the client is not registered for this grant type');
    }
    // The client's limit and its DPoP key's are answered alike: a CIBA poller is told to slow down, not to stop.
    const limited = (event: RateLimitedEvent, description?: string) =>
      grant.overClientLimit ? grant.overClientLimit(ctx, event) : overLimit(ctx.events, event, description);
    if (retryAfter !== undefined)
      throw limited({ endpoint: 'token', limit: 'client', clientId: client.clientId, retryAfter });
    const dpopJkt = dpopBindingAsked(req, client)
      ? await tokenRequestBinding(ctx, req, client, request.bodyHash, limited)
      : undefined;
    sendJson(res, 200, await grant.exchange(ctx, client, params, req, { dpopJkt, assertion }));
  };
}
