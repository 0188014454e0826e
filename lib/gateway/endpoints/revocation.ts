import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import type { ClientAuthenticator } from '../client-auth/authenticator.js';
import type { RequestContext } from '../http/request-context.js';
import { tokenKey, type AccessTokenRecord } from '../tokens/access-tokens.js';
import { findRefreshToken, type RefreshTokenKeeping } from '../tokens/refresh-tokens.js';
import type { Revocations } from '../tokens/revocations.js';
import type { EventHub } from '../../ops/events.js';
import type { RegisteredClient } from '../../registry/clients.js';

/** What revocation uses: the tokens' records, the clock, the revocation list and the events. */
export interface RevocationCollaborators extends RefreshTokenKeeping {
  revocations: Revocations;
  events: EventHub;
}

/** Another client's token is not revoked: RFC 7009 §2.1 has the server refuse the request (see below). */
function notYours(): OAuthError {
  return new OAuthError('invalid_request', 'the token was not issued to this client');
}

/**
 * An access token: a JWT one is put on the revocation list first (the guard verifies it offline), then its record
 * is deleted; an opaque one is revoked by deleting its record. False when no live access token has this value.
 */
async function revokeAccessToken(
  ctx: RevocationCollaborators,
  client: RegisteredClient,
  token: string,
): Promise<boolean> {
  const key = tokenKey(token);
  const record = (await ctx.store.get<AccessTokenRecord>('access_token', key))?.value;
  if (!record || record.expiresAt <= ctx.now()) return false;
  if (record.clientId !== client.clientId) throw notYours();
  if (record.format === 'jwt' && record.jti) await ctx.revocations.revokeToken(record.jti, record.expiresAt);
  await ctx.store.delete('access_token', key);
  ctx.events.emit('token.revoked', {
    clientId: record.clientId,
    ...(record.subscriberId === null ? {} : { subscriberId: record.subscriberId }),
    purpose: record.purpose,
    reason: 'revocation_request',
  });
  return true;
}

/**
 * A refresh token: RFC 7009 §2.1 asks that the access tokens of its grant go too, so its whole grant is revoked
 * (every access and refresh token issued from that code or auth_req_id). False when no live refresh token has
 * this value (a rotated-out one included: it is worthless already).
 */
async function revokeRefreshToken(
  ctx: RevocationCollaborators,
  client: RegisteredClient,
  token: string,
): Promise<boolean> {
  const stored = await findRefreshToken(ctx, token);
  if (!stored || stored.consumed || stored.value.expiresAt <= ctx.now()) return false;
  const record = stored.value;
  if (record.clientId !== client.clientId) throw notYours();
  await ctx.revocations.revokeGrants([record.grantId]);
  ctx.events.emit('token.revoked', {
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    reason: 'revocation_request',
  });
  return true;
}

/**
 * POST /revoke (RFC 7009), access and refresh tokens. An unknown, expired or already revoked token: 200 (§2.2), as
 * if revoked. Either way the guard refuses the revoked tokens from the next request on. `token_type_hint` only
 * orders the lookup (§2.1).
 *
 * Another client's token is not revoked, and the request is refused with invalid_request, as node-oidc-provider
 * does ("this token does not belong to you"): RFC 7009 §2.1 has the server verify that the token was issued to
 * the requesting client and, if not, refuse the request and tell the client. Answering 200 instead would tell the
 * client its request succeeded when it had no effect. It reveals nothing the bearer of the token could not learn
 * by presenting it to a service API.
 */
export function revocationEndpoint(ctx: RevocationCollaborators, auth: ClientAuthenticator) {
  return async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    const { params } = request;
    const { client } = await auth.authenticate(req, res, params, 'revoke');
    request.client = client;
    const token = params.require('token');
    const access = () => revokeAccessToken(ctx, client, token);
    const refresh = () => revokeRefreshToken(ctx, client, token);
    if (params.get('token_type_hint') === 'refresh_token') await ((await refresh()) || access());
    else await ((await access()) || refresh());
    res.status(200).end();
  };
}
