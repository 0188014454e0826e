import { hashedRecordId } from '../../crypto.js';
import { OAuthError } from '../../errors.js';
import { CIBA_GRANT } from '../../registry/clients.js';
import type { Grant, GrantCollaborators } from './grant.js';
import { issueAccessToken, redeemedBefore, reportIssued, type TokenResponse } from '../tokens/access-tokens.js';
import { redemptionOf } from '../tokens/redemptions.js';
import { offeredRefreshToken } from '../tokens/refresh-tokens.js';
import { idTokenRequested, issueIdToken } from '../tokens/id-tokens.js';
import type { BackchannelRecord, PollRecord } from '../requests/backchannel-requests.js';
import type { RateLimitedEvent } from '../../ops/events.js';
import { askRevoked, refuseRevoked, revokedError } from '../levers/not-before.js';

type Outcome =
  | { kind: 'approved'; consentGrants: string[] }
  | { kind: 'pending' }
  | { kind: 'denied'; by: 'decision' | 'consent' };

/**
 * A CIBA poll over the client's token limit: `slow_down`, the answer CIBA Core §11 has for polling too fast,
 * with `Retry-After`. Pollers (openid-client) add 5 s to their interval and keep polling; a 429 would end it.
 */
function cibaSlowDown(ctx: GrantCollaborators, event: RateLimitedEvent): OAuthError {
  ctx.events.emit('rate.limited', event);
  ctx.events.emit('ciba.slow_down', { clientId: event.clientId ?? '', reason: 'rate_limit' });
  return new OAuthError('slow_down', 'too many requests; poll more slowly', {
    headers: { 'Retry-After': String(event.retryAfter) },
  });
}

/** Where the request stands: the hook's decision first, then the subscriber's consent where the policy needs it. */
async function outcome(ctx: GrantCollaborators, record: BackchannelRecord): Promise<Outcome> {
  if (record.status === 'denied') return { kind: 'denied', by: 'decision' };
  if (record.status === 'pending') return { kind: 'pending' };
  if (record.consentScopes.length === 0) return { kind: 'approved', consentGrants: [] };
  const consent = await ctx.consent.state({
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    scopes: record.consentScopes,
  });
  if (consent.state === 'granted') return { kind: 'approved', consentGrants: consent.grantIds };
  // Only a refusal made while this request was open answers it; an older one leaves room to ask again.
  if (consent.state === 'denied' && consent.decidedAt >= record.createdAt) return { kind: 'denied', by: 'consent' };
  return { kind: 'pending' };
}

/** CIBA §11 slow_down: measured from the previous poll; each early poll adds 5 s for this request. */
async function pendingAnswer(ctx: GrantCollaborators, key: string, record: BackchannelRecord): Promise<OAuthError> {
  const now = ctx.now();
  const previous = (await ctx.store.get<PollRecord>('poll', key))?.value;
  const interval = previous?.interval ?? ctx.lifetimes.pollInterval;
  const tooSoon = previous !== undefined && now - previous.last < interval * 1000;
  const next: PollRecord = { last: now, interval: tooSoon ? interval + 5 : interval };
  const ttl = Math.max(1, Math.ceil((record.expiresAt - now) / 1000) + ctx.lifetimes.expiredRetention);
  // Not in the grant's index (see createBackchannelRequest): poll state outlives nothing it could let through.
  await ctx.store.put('poll', key, next, { ttl });
  if (tooSoon)
    ctx.events.emit('ciba.slow_down', {
      clientId: record.clientId,
      subscriberId: record.subscriberId,
      reason: 'interval',
    });
  return tooSoon
    ? new OAuthError('slow_down', `poll at most every ${next.interval} seconds`)
    : new OAuthError('authorization_pending', 'the subscriber has not yet authorized the request');
}

export const cibaGrant: Grant = {
  type: CIBA_GRANT,
  overClientLimit: cibaSlowDown,
  async exchange(ctx, client, params, _req, options) {
    const authReqId = params.require('auth_req_id');
    // The request and its poll state are stored under the auth_req_id's hash.
    const key = hashedRecordId(authReqId);
    const stored = await ctx.store.get<BackchannelRecord>('backchannel', key);
    // Another client's id is answered exactly like an unknown one: nothing about it is revealed.
    if (!stored || stored.value.clientId !== client.clientId)
      throw new OAuthError('invalid_grant', 'unknown auth_req_id');
    const record = stored.value;
    const presented = { kind: 'backchannel', id: key, secret: authReqId } as const;
    // A retry of a poll whose answer was lost (a late store reply: 503) gets the tokens that poll stored.
    const again = () => redeemedBefore(ctx, presented, client.clientId, options.dpopJkt);
    if (stored.consumed) {
      // Never handed again once the operator revoked the subscriber or client.
      await refuseRevoked(ctx.notBefore, record, 'auth_req_id');
      const tokens = await again();
      if (!tokens) throw new OAuthError('invalid_grant', 'the auth_req_id was already used');
      return withIdToken(ctx, record, authReqId, tokens);
    }
    const subject = {
      clientId: record.clientId,
      subscriberId: record.subscriberId,
      purpose: record.purpose,
      scopes: record.scopes,
    };
    if (record.expiresAt <= ctx.now()) {
      ctx.events.emit('ciba.expired', subject);
      throw new OAuthError('expired_token', 'the auth_req_id has expired');
    }

    // No subscriber limit here: this request was counted against the subscriber when it was made (bc-authorize),
    // it yields one token at most, and its polls are paced by its interval (slow_down) and the client's limit.
    // Counting each poll again would cost a Redis round trip per poll and protect no one. A revocation of the
    // subscriber or client ends the request at its next poll: the markers are asked for now, so they are read
    // beside the consent, or (nothing else to read) beside the consume that issues the tokens.
    const revoked = askRevoked(ctx.notBefore, record);
    const result = await outcome(ctx, record);
    if (result.kind !== 'approved' && (await revoked)) throw revokedError('auth_req_id');
    if (result.kind === 'denied') {
      ctx.events.emit('ciba.denied', { ...subject, reason: result.by });
      throw new OAuthError('access_denied', 'the subscriber denied the request', { status: 400 });
    }
    if (result.kind === 'pending') throw await pendingAnswer(ctx, key, record);

    // Single use: of concurrent polls for an approved request exactly one wins the token. Consuming the request
    // and storing its token are one atomic step: a failure (503) leaves the request approved, to poll again.
    const exchanged = redemptionOf(presented);
    const refresh = offeredRefreshToken(
      ctx,
      client,
      record,
      record.grantId,
      result.consentGrants,
      options.dpopJkt,
      exchanged,
    );
    const tokens = await issueAccessToken(ctx, record, record.grantId, result.consentGrants, exchanged, {
      ...options,
      refresh,
      revoked,
    });
    if (!tokens) {
      // A concurrent poll won: the same client gets the same tokens, never a second set.
      const same = await again();
      if (!same) throw new OAuthError('invalid_grant', 'the auth_req_id was already used');
      return withIdToken(ctx, record, authReqId, same);
    }
    withIdToken(ctx, record, authReqId, tokens);
    ctx.events.emit('ciba.approved', subject);
    reportIssued(ctx, record, CIBA_GRANT, tokens);
    return tokens;
  },
};

/** Adds the ID token when `openid` was granted (and ID tokens are on). */
function withIdToken(
  ctx: GrantCollaborators,
  record: BackchannelRecord,
  authReqId: string,
  tokens: TokenResponse,
): TokenResponse {
  if (idTokenRequested(ctx, record.scope)) {
    tokens.id_token = issueIdToken(ctx, {
      clientId: record.clientId,
      subscriber: { id: record.subscriberId },
      identifiedBy: record.identifiedBy,
      // When the request was approved (by the hook, or at once when created); older records lack approvedAt.
      authTime: record.approvedAt ?? record.createdAt,
      accessToken: tokens.access_token,
      // CIBA Core §10.3.1 binds a push-mode ID token to its request with this claim and at_hash; §10.1.1
      // (poll) does not require them, but the token endpoint response benefits from the same binding, and
      // node-oidc-provider and the FAPI-CIBA conformance checks expect it there too. CIBA has no nonce.
      extra: { 'urn:openid:params:jwt:claim:auth_req_id': authReqId },
    });
  }
  return tokens;
}
