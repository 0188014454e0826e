import type { ConsentRecord, ConsentSubject, ConsentWithdrawal } from '../../consent/registry.js';
import type { ClientRevocationReason, EventHub, SubscriberRevocationReason } from '../../ops/events.js';
import type { NotBeforeMarkers } from './not-before.js';

/**
 * What the operator's levers use: the not-before markers, the consents (listed, and withdrawn through the gateway,
 * which revokes their tokens: lib/gateway/consents.ts) and the events.
 */
export interface Levers {
  notBefore: NotBeforeMarkers;
  consent: {
    list(subscriberId: string): Promise<ConsentRecord[]>;
    revoke(subject: ConsentSubject, withdrawal: Omit<ConsentWithdrawal, 'at'>): Promise<ConsentRecord[]>;
  };
  events: EventHub;
}

/** What happens to the subscriber's consent records: `withdraw` removes them all (granted and refused), `keep` leaves them. */
export type ConsentDisposition = 'keep' | 'withdraw';

/** Each reason's default: the line's next holder (or nobody) must not inherit consents; a suspect line keeps them. */
export const CONSENTS_BY_REASON: Readonly<Record<SubscriberRevocationReason, ConsentDisposition>> = {
  number_recycled: 'withdraw',
  erasure_request: 'withdraw',
  contract_ended: 'withdraw',
  sim_swap: 'keep',
  fraud: 'keep',
};

export const CLIENT_REVOCATION_REASONS: readonly ClientRevocationReason[] = [
  'compromised',
  'offboarded',
  'contract_ended',
  'fraud',
];

export interface SubscriberRevocation {
  reason: SubscriberRevocationReason;
  /** Default by reason: `withdraw` for `number_recycled`, `erasure_request`, `contract_ended`; `keep` for `sim_swap`, `fraud`. */
  consents?: ConsentDisposition;
}

export interface ClientRevocation {
  reason: ClientRevocationReason;
}

/** What a subscriber's revocation did. */
export interface SubscriberRevocationResult {
  /** Epoch ms: whatever the subscriber was granted before it is refused. */
  notBefore: number;
  consents: ConsentDisposition;
  /** Consent records removed (granted and refused); 0 with `consents: 'keep'`. */
  consentsWithdrawn: number;
}

/** What a client's revocation did. */
export interface ClientRevocationResult {
  /** Epoch ms: whatever the client was granted before it is refused. */
  notBefore: number;
}

function checkId(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string`);
}

function reasonOf<R extends string>(given: unknown, allowed: readonly R[], api: string): R {
  if (typeof given !== 'string' || !(allowed as readonly string[]).includes(given))
    throw new TypeError(`${api} reason must be one of ${allowed.join(', ')}`);
  return given as R;
}

/**
 * netauth.subscribers.revoke: the subscriber's marker first (from then on every token, refresh token, code,
 * auth_req_id and consent interaction that began before it is refused, on every instance), then the consents,
 * each (client, purpose) through the one withdrawal path, which also revokes the tokens issued under them.
 */
export async function revokeSubscriber(
  ctx: Levers,
  subscriberId: string,
  options: SubscriberRevocation,
): Promise<SubscriberRevocationResult> {
  checkId(subscriberId, 'subscribers.revoke subscriberId');
  const reason = reasonOf(
    options?.reason,
    Object.keys(CONSENTS_BY_REASON) as SubscriberRevocationReason[],
    'subscribers.revoke',
  );
  const consents = options.consents ?? CONSENTS_BY_REASON[reason];
  if (consents !== 'keep' && consents !== 'withdraw')
    throw new TypeError("subscribers.revoke consents must be 'keep' or 'withdraw'");
  const notBefore = await ctx.notBefore.mark('subscriber', subscriberId);
  let consentsWithdrawn = 0;
  if (consents === 'withdraw') {
    for (const subject of bySubject(await ctx.consent.list(subscriberId)))
      consentsWithdrawn += (await ctx.consent.revoke(subject, { by: 'operator', via: 'api', reason })).length;
  }
  ctx.events.emit('subscriber.revoked', { subscriberId, reason, consents, consentsWithdrawn });
  return { notBefore, consents, consentsWithdrawn };
}

/**
 * netauth.clients.revoke: the client's marker. Every token and pending request of the client that began before it
 * is refused on every instance; a registration the registry returns afterwards, under the same id, starts clean.
 */
export async function revokeClient(
  ctx: Levers,
  clientId: string,
  options: ClientRevocation,
): Promise<ClientRevocationResult> {
  checkId(clientId, 'clients.revoke clientId');
  const reason = reasonOf(options?.reason, CLIENT_REVOCATION_REASONS, 'clients.revoke');
  const notBefore = await ctx.notBefore.mark('client', clientId);
  ctx.events.emit('client.revoked', { clientId, reason });
  return { notBefore };
}

/** The records of one subscriber, one subject per (client, purpose), with its scopes. */
function bySubject(records: readonly ConsentRecord[]) {
  const subjects = new Map<string, { clientId: string; subscriberId: string; purpose: string; scopes: string[] }>();
  for (const { clientId, subscriberId, purpose, scope } of records) {
    const key = JSON.stringify([clientId, purpose]);
    const subject = subjects.get(key) ?? { clientId, subscriberId, purpose, scopes: [] };
    if (!subject.scopes.includes(scope)) subject.scopes.push(scope);
    subjects.set(key, subject);
  }
  return subjects.values();
}
