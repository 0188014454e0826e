import { hashedRecordId, randomTag, taggedId } from '../../crypto.js';
import type { Store } from '../../stores/store.js';
import type { BackchannelOptions, BackchannelRequest, Lifetimes } from '../options.js';
import { storedAuthorization, subscriberOf, type ScopeDecision, type StoredAuthorization } from './authorization.js';
import type { RegisteredClient } from '../../registry/clients.js';
import type { Subscriber } from '../../identity/subscribers.js';
import type { SubscriberIdentification } from '../../identity/identification.js';

/** A CIBA request as stored under its auth_req_id's hash (`hashedRecordId`): a leaked store holds none to poll with. */
export interface BackchannelRecord extends StoredAuthorization {
  /** Scopes that need a consent record before a token is issued. */
  consentScopes: string[];
  /** The approval hook's decision: `pending` until it resolves. Consent is checked separately, at each poll. */
  status: 'pending' | 'approved' | 'denied';
  createdAt: number;
  /** Epoch ms of the approval (the ID token's auth_time): `createdAt` when approved at once; null until then. */
  approvedAt: number | null;
  expiresAt: number;
  grantId: string;
  [key: string]: string | number | null | string[];
}

/** Last poll of a request, kept apart from the request so a poll never overwrites an approval. */
export interface PollRecord {
  last: number;
  interval: number;
  [key: string]: number;
}

/** What keeping CIBA requests uses: the store, the clock, the lifetimes and the backchannel options. */
export interface BackchannelKeeping {
  store: Store;
  now: () => number;
  lifetimes: Required<Lifetimes>;
  backchannel: BackchannelOptions;
}

function ttlFor(ctx: Pick<BackchannelKeeping, 'now' | 'lifetimes'>, record: BackchannelRecord): number {
  // Kept past expiry so a late poll learns expired_token rather than invalid_grant.
  return Math.max(1, Math.ceil((record.expiresAt - ctx.now()) / 1000) + ctx.lifetimes.expiredRetention);
}

export function toHookRequest(
  authReqId: string,
  record: BackchannelRecord,
  client: RegisteredClient | undefined,
): BackchannelRequest {
  const subscriber = subscriberOf(record);
  return {
    auth_req_id: authReqId,
    clientId: record.clientId,
    ...(client?.name === undefined ? {} : { clientName: client.name }),
    subscriber,
    purpose: record.purpose,
    scopes: record.scopes,
    scope: record.scope,
    expiresAt: record.expiresAt,
    identifiedBy: record.identifiedBy,
  };
}

export async function createBackchannelRequest(
  ctx: BackchannelKeeping,
  client: RegisteredClient,
  subscriber: Subscriber,
  decision: ScopeDecision,
  identifiedBy: SubscriberIdentification,
): Promise<{ authReqId: string; record: BackchannelRecord }> {
  // 256 random bits, base64url: opaque and unguessable (CIBA §7.3 asks for at least 128). The id and its grant
  // carry one placement tag, so a sharded store keeps the request, its poll state and its token together.
  const tag = randomTag();
  const authReqId = taggedId(tag, 32);
  const createdAt = ctx.now();
  const record: BackchannelRecord = {
    ...storedAuthorization(client.clientId, subscriber, decision.requested, identifiedBy, createdAt),
    consentScopes: decision.consentScopes,
    status: ctx.backchannel.authorize ? 'pending' : 'approved',
    createdAt,
    approvedAt: ctx.backchannel.authorize ? null : createdAt,
    expiresAt: createdAt + ctx.lifetimes.authReqId * 1000,
    grantId: taggedId(tag, 16),
  };
  // Not written into its grant's index: nothing revokes a request by its grant (consent is checked at every
  // poll, and the grant is only the tokens'), and a pending request then costs one Redis key, not two.
  await ctx.store.put('backchannel', hashedRecordId(authReqId), record, { ttl: ttlFor(ctx, record) });
  return { authReqId, record };
}

/** Deletes a request whose auth_req_id was never sent (bc-authorize refused it after writing it). */
export async function forgetBackchannelRequest(
  ctx: Pick<BackchannelKeeping, 'store'>,
  authReqId: string,
): Promise<void> {
  await ctx.store.delete('backchannel', hashedRecordId(authReqId));
}

/**
 * Records the approval hook's decision (or an operator's, through `netauth.backchannel`).
 * Only a pending, unexpired request changes; true when it did.
 */
export async function decideBackchannelRequest(
  ctx: Pick<BackchannelKeeping, 'store' | 'now' | 'lifetimes'>,
  authReqId: string,
  decision: 'approved' | 'denied',
): Promise<boolean> {
  const key = hashedRecordId(authReqId);
  const stored = await ctx.store.get<BackchannelRecord>('backchannel', key);
  if (!stored || stored.consumed || stored.value.status !== 'pending' || stored.value.expiresAt <= ctx.now())
    return false;
  const record: BackchannelRecord = {
    ...stored.value,
    status: decision,
    approvedAt: decision === 'approved' ? ctx.now() : null,
  };
  await ctx.store.put('backchannel', key, record, { ttl: ttlFor(ctx, record) });
  return true;
}
