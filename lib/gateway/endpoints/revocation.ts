import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import type { ClientAuthenticator } from '../client-auth/authenticator.js';
import type { GatewayContext } from '../context.js';
import { formParams } from '../http/form.js';
import { tokenKey, type AccessTokenRecord } from '../tokens/access-tokens.js';

/**
 * POST /revoke (RFC 7009). An unknown, expired or already revoked token: 200 (§2.2), as if revoked.
 * A JWT access token is put on the revocation list first (the guard verifies it offline), then its
 * record is deleted; an opaque token is revoked by deleting its record. Either way the guard refuses the
 * token from the next request on. Only access tokens exist here, so `token_type_hint` changes nothing.
 */
export function revocationEndpoint(ctx: GatewayContext, auth: ClientAuthenticator) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = formParams(req);
    const client = await auth.authenticate(req, res, params, 'revoke');
    const token = params.require('token');
    params.get('token_type_hint'); // read only to refuse a repeated parameter
    const key = tokenKey(token);
    const record = (await ctx.store.get<AccessTokenRecord>('access_token', key))?.value;
    if (record && record.expiresAt > ctx.now()) {
      // Another client's token is not revoked, and the request is refused with invalid_request, as
      // node-oidc-provider does ("this token does not belong to you"): RFC 7009 §2.1 has the server verify
      // that the token was issued to the requesting client and, if not, refuse the request and tell the
      // client. Answering 200 instead would tell the client its request succeeded when it had no effect.
      // It reveals nothing the bearer of the token could not learn by presenting it to a service API.
      if (record.clientId !== client.clientId) throw new OAuthError('invalid_request', 'the token was not issued to this client');
      if (record.format === 'jwt' && record.jti) await ctx.revocations.revokeToken(record.jti, record.expiresAt);
      await ctx.store.delete('access_token', key);
      ctx.events.emit('token.revoked', { clientId: record.clientId, subscriberId: record.subscriberId, purpose: record.purpose, reason: 'revocation_request' });
    }
    res.status(200).end();
  };
}
