import { OAuthError } from '../../errors.js';
import { CIBA_GRANT } from '../../registry/clients.js';
import type { GatewayContext } from '../context.js';
import type { Grant } from './grant.js';
import { issueAccessToken } from '../access-tokens.js';
import { idTokenRequested, issueIdToken } from '../id-tokens.js';
import type { BackchannelRecord, PollRecord } from '../backchannel-requests.js';

type Outcome = { kind: 'approved'; consentGrants: string[] } | { kind: 'pending' } | { kind: 'denied' };

/** Where the request stands: the hook's decision first, then the subscriber's consent where the policy needs it. */
async function outcome(ctx: GatewayContext, record: BackchannelRecord): Promise<Outcome> {
  if (record.status === 'denied') return { kind: 'denied' };
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
  if (consent.state === 'denied' && consent.decidedAt >= record.createdAt) return { kind: 'denied' };
  return { kind: 'pending' };
}

/** CIBA §11 slow_down: measured from the previous poll; each early poll adds 5 s for this request. */
async function pendingAnswer(ctx: GatewayContext, authReqId: string, record: BackchannelRecord): Promise<OAuthError> {
  const now = ctx.now();
  const previous = (await ctx.store.get<PollRecord>('poll', authReqId))?.value;
  const interval = previous?.interval ?? ctx.lifetimes.pollInterval;
  const tooSoon = previous !== undefined && now - previous.last < interval * 1000;
  const next: PollRecord = { last: now, interval: tooSoon ? interval + 5 : interval };
  const ttl = Math.max(1, Math.ceil((record.expiresAt - now) / 1000) + ctx.lifetimes.expiredRetention);
  await ctx.store.put('poll', authReqId, next, { ttl, grants: [record.grantId] });
  return tooSoon
    ? new OAuthError('slow_down', `poll at most every ${next.interval} seconds`)
    : new OAuthError('authorization_pending', 'the subscriber has not yet authorized the request');
}

export const cibaGrant: Grant = {
  type: CIBA_GRANT,
  async exchange(ctx, client, params) {
    const authReqId = params.require('auth_req_id');
    const stored = await ctx.store.get<BackchannelRecord>('backchannel', authReqId);
    // Another client's id is answered exactly like an unknown one: nothing about it is revealed.
    if (!stored || stored.value.clientId !== client.clientId) throw new OAuthError('invalid_grant', 'unknown auth_req_id');
    if (stored.consumed) throw new OAuthError('invalid_grant', 'the auth_req_id was already used');
    const record = stored.value;
    if (record.expiresAt <= ctx.now()) throw new OAuthError('expired_token', 'the auth_req_id has expired');

    const result = await outcome(ctx, record);
    if (result.kind === 'denied') throw new OAuthError('access_denied', 'the subscriber denied the request', { status: 400 });
    if (result.kind === 'pending') throw await pendingAnswer(ctx, authReqId, record);

    // Single use: of concurrent polls for an approved request exactly one wins the token.
    if (!(await ctx.store.consume('backchannel', authReqId))) throw new OAuthError('invalid_grant', 'the auth_req_id was already used');
    const tokens = await issueAccessToken(ctx, {
      clientId: record.clientId,
      subscriber: record.phoneNumber === null ? { id: record.subscriberId } : { id: record.subscriberId, phoneNumber: record.phoneNumber },
      purpose: record.purpose,
      scopes: record.scopes,
      scope: record.scope,
      grants: [record.grantId, ...result.consentGrants],
    });
    if (idTokenRequested(ctx, record.scope)) {
      tokens.id_token = await issueIdToken(ctx, {
        clientId: record.clientId,
        subscriber: { id: record.subscriberId },
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
  },
};
