import { OAuthError, isOAuthError } from '../../errors.js';
import { parseScope } from '../../identity/scope.js';
import type { RegisteredClient } from '../../registry/clients.js';
import { limitSubscriber } from '../requests/subscriber-limit.js';
import type { Grant, GrantCollaborators } from './grant.js';
import {
  authorizationOf,
  checkIdentification,
  decideScope,
  type ScopeDecision,
  type StoredAuthorization,
} from '../requests/authorization.js';
import { issueAccessToken, redeemedBefore, reportIssued, tokenKey } from '../tokens/access-tokens.js';
import { redemptionOf } from '../tokens/redemptions.js';
import { findRefreshToken, mintRefreshToken, type RefreshTokenRecord } from '../tokens/refresh-tokens.js';
import { refuseRevoked } from '../levers/not-before.js';

/**
 * RFC 9700 §4.14.2: a rotated-out refresh token presented again means two parties hold it. Every token of its
 * grant is revoked (access tokens, and the refresh token that replaced it), so whoever holds the new one learns it too.
 */
async function reused(ctx: GrantCollaborators, record: RefreshTokenRecord): Promise<OAuthError> {
  await ctx.revocations.revokeGrants([record.grantId]);
  ctx.events.emit('token.revoked', {
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    reason: 'refresh_token_reuse',
  });
  return new OAuthError('invalid_grant', 'the refresh_token was already used; every token of its grant is revoked');
}

/**
 * RFC 6749 §6: the requested `scope` may narrow the grant's, never widen it: the same purpose, API scopes and
 * protocol scopes (`openid`, `offline_access`) the grant has. The access token gets the narrowed scope; the new
 * refresh token keeps the grant's.
 */
function narrowed(record: RefreshTokenRecord, scope: string | undefined): StoredAuthorization {
  const grant = authorizationOf(record);
  if (scope === undefined) return grant;
  const requested = parseScope(scope);
  const granted = parseScope(record.scope);
  const wider =
    requested.purpose !== granted.purpose ||
    requested.scopes.some((s) => !granted.scopes.includes(s)) ||
    (requested.openid && !granted.openid) ||
    (requested.offlineAccess && !granted.offlineAccess);
  if (wider) throw new OAuthError('invalid_scope', 'scope may only narrow what the refresh token was granted');
  return { ...grant, scopes: requested.scopes, scope: requested.value };
}

/**
 * The CAMARA profile's conditions for a new access token, checked on every refresh: the client is still
 * registered for the grant's scopes, the policy still allows them, their tokens are not single use (a refresh
 * would mint another: Number Verification's one answer per authorization), the subscriber was identified as
 * they require, and the consent they need is still given (the consent grants the tokens will rest on).
 * Anything else: invalid_grant.
 */
async function consentGrantsNow(
  ctx: GrantCollaborators,
  client: RegisteredClient,
  record: RefreshTokenRecord,
): Promise<string[]> {
  let decision: ScopeDecision;
  try {
    decision = decideScope(ctx, client, record.scope);
  } catch (error) {
    if (isOAuthError(error) && error.code === 'invalid_scope')
      throw new OAuthError(
        'invalid_grant',
        "the client is no longer registered for this grant's scope, or the policy no longer knows it",
      );
    throw error;
  }
  if (decision.basis === 'forbidden')
    throw new OAuthError('invalid_grant', 'the policy now forbids this purpose and scope');
  if (decision.singleUse) {
    const description = "this grant's scope has single-use access tokens, which are never refreshed; authorize again";
    throw new OAuthError('invalid_grant', description);
  }
  checkIdentification(decision, record.identifiedBy, 'invalid_grant');
  if (decision.consentScopes.length === 0) return [];
  const consent = await ctx.consent.state({
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    scopes: decision.consentScopes,
  });
  if (consent.state !== 'granted')
    throw new OAuthError('invalid_grant', "the subscriber's consent is no longer on record");
  return consent.grantIds;
}

/**
 * `grant_type=refresh_token` (RFC 6749 §6, the CAMARA profile's Offline Access): single use with rotation. Every
 * check comes before the token is used, so a bad request burns nothing; then using it and storing the new access
 * and refresh tokens are one atomic step (the store's `consume` with both records attached): of concurrent
 * refreshes exactly one issues tokens; the same client's duplicates within `lifetimes.redemptionRetry` get those,
 * and any later use is a reuse, which revokes the grant.
 */
export const refreshTokenGrant: Grant = {
  type: 'refresh_token',
  async exchange(ctx, client, params, _req, options) {
    const presented = params.require('refresh_token');
    const scope = params.get('scope');
    const stored = await findRefreshToken(ctx, presented);
    // Another client's token is answered exactly like an unknown one.
    if (!stored || stored.value.clientId !== client.clientId)
      throw new OAuthError('invalid_grant', 'unknown refresh_token');
    const record = stored.value;
    if (record.expiresAt <= ctx.now()) throw new OAuthError('invalid_grant', 'the refresh_token has expired');
    await refuseRevoked(ctx.notBefore, record, 'refresh_token');
    const redeeming = { kind: 'refresh_token', id: tokenKey(presented), secret: presented } as const;
    // A retry of a refresh whose answer was lost (a late store reply: 503), or a concurrent duplicate, by the same
    // client (and DPoP key) within lifetimes.redemptionRetry gets the same tokens; anything else is a reuse.
    const again = () => redeemedBefore(ctx, redeeming, client.clientId, options.dpopJkt);
    if (stored.consumed) {
      const same = await again();
      if (!same) throw await reused(ctx, record);
      return same;
    }
    // RFC 9449 §5: a grant whose tokens were DPoP-bound is never refreshed into a Bearer token.
    if (typeof record.jkt === 'string' && options.dpopJkt === undefined) {
      const description = "this grant's tokens are DPoP-bound: send a DPoP proof with the refresh";
      throw new OAuthError('invalid_dpop_proof', description);
    }
    const authorization = narrowed(record, scope);
    const consentGrants = await consentGrantsNow(ctx, client, record);
    // Before anything is used: the refresh token stays good for a retry after Retry-After.
    await limitSubscriber(ctx, 'token', record.clientId, record.subscriberId);

    const exchanged = redemptionOf(redeeming);
    const refresh = mintRefreshToken(ctx, record, record.grantId, consentGrants, options.dpopJkt, exchanged);
    const tokens = await issueAccessToken(ctx, authorization, record.grantId, consentGrants, exchanged, {
      ...options,
      refresh,
    });
    if (!tokens) {
      const same = await again();
      if (!same) throw await reused(ctx, record);
      return same;
    }
    reportIssued(ctx, authorization, 'refresh_token', tokens);
    return tokens;
  },
};
