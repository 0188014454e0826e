import { sha256, taggedId } from '../crypto.js';
import type { Store } from '../stores/store.js';
import { DEFAULT_CONSENT_LIFETIME, type ConsentPolicy } from './policy.js';

/** One subscriber's decision for one (client, purpose, scope). */
export interface ConsentRecord {
  clientId: string;
  subscriberId: string;
  purpose: string;
  scope: string;
  status: 'granted' | 'denied';
  /** Epoch ms of the decision. */
  decidedAt: number;
  /** Epoch ms after which a granted consent no longer counts. */
  expiresAt: number;
  /** Tokens issued under this consent carry this grant id; revoking the consent revokes them. */
  grantId: string;
  [key: string]: string | number;
}

export interface ConsentSubject {
  clientId: string;
  subscriberId: string;
  purpose: string;
  scopes: readonly string[];
}

/** What the records say about a request, all scopes together. */
export type ConsentState =
  | { state: 'granted'; grantIds: string[] }
  | { state: 'denied'; decidedAt: number }
  | { state: 'none' };

// A refusal is remembered long enough to answer every request pending at that time.
const DENIAL_LIFETIME = 24 * 3600;

/**
 * The placement tag of a client's consent records for one subscriber (lib/stores/store.ts): derived from both,
 * so a sharded store keeps all of them (every purpose and scope, and their grants) on one shard and spreads
 * subscribers over all shards.
 */
function consentTag(clientId: string, subscriberId: string): string {
  return sha256(`${encodeURIComponent(clientId)}|${encodeURIComponent(subscriberId)}`).slice(0, 8);
}

function recordId(clientId: string, subscriberId: string, purpose: string, scope: string): string {
  return `${consentTag(clientId, subscriberId)}.${[clientId, subscriberId, purpose, scope].map(encodeURIComponent).join('|')}`;
}

/** Consent records, per (client, subscriber, purpose, scope), kept in the store. */
export class ConsentRecords {
  constructor(
    private readonly store: Store,
    private readonly policy: ConsentPolicy,
    private readonly now: () => number,
    /**
     * Revokes the tokens issued under a consent's grant. Default: deletes the records written with it. The gateway
     * passes its revocation list, which also reaches JWT access tokens (verified offline, with no record to
     * delete), and reports the revocation as an event.
     */
    private readonly revokeGrant: (grantId: string, consent: ConsentRecord) => Promise<void> = (grantId) =>
      store.revokeGrant(grantId),
  ) {}

  async grant(subject: ConsentSubject): Promise<ConsentRecord[]> {
    const decidedAt = this.now();
    return Promise.all(
      subject.scopes.map(async (scope) => {
        const lifetime = this.policy.rule(subject.purpose, scope)?.consentLifetime ?? DEFAULT_CONSENT_LIFETIME;
        return this.decide(subject, scope, 'granted', decidedAt, lifetime);
      }),
    );
  }

  async deny(subject: ConsentSubject): Promise<ConsentRecord[]> {
    const decidedAt = this.now();
    return Promise.all(
      subject.scopes.map((scope) => this.decide(subject, scope, 'denied', decidedAt, DENIAL_LIFETIME)),
    );
  }

  /** Deletes the records and revokes every token issued under them. True if anything was on record. */
  async revoke(subject: ConsentSubject): Promise<boolean> {
    const found = await Promise.all(
      subject.scopes.map(async (scope) => {
        const id = recordId(subject.clientId, subject.subscriberId, subject.purpose, scope);
        const existing = await this.store.get<ConsentRecord>('consent', id);
        if (!existing) return false;
        await this.store.delete('consent', id);
        await this.revokeGrant(existing.value.grantId, existing.value);
        return true;
      }),
    );
    return found.some(Boolean);
  }

  async lookup(subject: ConsentSubject): Promise<ConsentRecord[]> {
    const records = await Promise.all(
      subject.scopes.map((scope) =>
        this.store.get<ConsentRecord>(
          'consent',
          recordId(subject.clientId, subject.subscriberId, subject.purpose, scope),
        ),
      ),
    );
    const now = this.now();
    return records.flatMap((r) => (r && r.value.expiresAt > now ? [r.value] : []));
  }

  /** Granted only when every scope is granted and live; denied when any scope was refused. */
  async state(subject: ConsentSubject): Promise<ConsentState> {
    const records = await this.lookup(subject);
    const denied = records.filter((r) => r.status === 'denied');
    if (denied.length > 0) return { state: 'denied', decidedAt: Math.max(...denied.map((r) => r.decidedAt)) };
    const granted = records.filter((r) => r.status === 'granted');
    if (granted.length === subject.scopes.length) return { state: 'granted', grantIds: granted.map((r) => r.grantId) };
    return { state: 'none' };
  }

  private async decide(
    subject: ConsentSubject,
    scope: string,
    status: ConsentRecord['status'],
    decidedAt: number,
    lifetime: number,
  ): Promise<ConsentRecord> {
    const id = recordId(subject.clientId, subject.subscriberId, subject.purpose, scope);
    const previous = (await this.store.get<ConsentRecord>('consent', id))?.value;
    const stillGranted = previous?.status === 'granted' && previous.expiresAt > decidedAt;
    const record: ConsentRecord = {
      clientId: subject.clientId,
      subscriberId: subject.subscriberId,
      purpose: subject.purpose,
      scope,
      status,
      decidedAt,
      expiresAt: decidedAt + lifetime * 1000,
      // Renewing a live consent keeps its grant id, so a later revocation still reaches every token under it.
      grantId:
        status === 'granted' && stillGranted
          ? previous.grantId
          : taggedId(consentTag(subject.clientId, subject.subscriberId), 16),
    };
    await this.store.put('consent', id, record, { ttl: lifetime });
    // A refusal supersedes a consent: the tokens issued under it go with it.
    if (status === 'denied' && previous?.status === 'granted') await this.revokeGrant(previous.grantId, previous);
    return record;
  }
}
