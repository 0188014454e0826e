import { setTimeout as sleep } from 'node:timers/promises';
import { randomTag, sha256, taggedId } from '../crypto.js';
import { placementTag, StoreUnavailableError, type Store } from '../stores/store.js';
import type { ConsentPolicy } from './policy.js';
import { CONSENT_LIFETIME_DEFAULT } from '../defaults.js';
import type { ConsentEvidence, ConsentRecord, ConsentRegistry, ConsentSubject, ConsentWithdrawal } from './registry.js';

// A refusal is remembered long enough to answer every request pending at that time.
const DENIAL_LIFETIME = 24 * 3600;
/** Seconds a subscriber's index lock lives if its holder dies before releasing it. */
const LOCK_TTL = 5;
/** How long a writer waits for the lock before it gives up (the request answers 503, as for a store outage). */
const LOCK_WAIT_MS = 6000;

/** Seconds a withdrawn consent is kept as evidence, by default (as long as a consent lives by default). */
const WITHDRAWN_RETENTION = CONSENT_LIFETIME_DEFAULT;

/** The subscriber's index: which (client, purpose, scope) records exist, for `list`. */
type SubscriberIndex = {
  /** `clientId|purpose|scope`, each part URI-encoded. */
  entries: string[];
  /** The same, of the withdrawn consents kept for `history` (the last withdrawal of each). */
  withdrawn?: string[];
  /** Epoch ms after which no entry can be live. */
  expiresAt: number;
};

/**
 * The placement tag of a client's consent records for one subscriber (lib/stores/store.ts): derived from both,
 * so a sharded store keeps all of them (every purpose and scope) on one shard and spreads subscribers over all
 * shards. It never leaves the store: an unkeyed digest of two identifiers, which anyone can compute from guesses
 * (grant ids, which clients read, carry a random tag).
 */
function recordTag(clientId: string, subscriberId: string): string {
  return sha256(`${encodeURIComponent(clientId)}|${encodeURIComponent(subscriberId)}`).slice(0, 8);
}

/** A new consent's grant id: random, tag included, as it reaches clients (JWT access tokens' `grant_ids`). */
function newGrantId(): string {
  return taggedId(randomTag(), 16);
}

/**
 * A grant id of an older version carried `recordTag` (issue 42, finding 3): the same id with its tag drawn from
 * its own random part (132 random bits in all, as before), so concurrent rewrites of one record agree. Undefined
 * for an id of the current form.
 */
function rekeyedGrantId(record: ConsentRecord): string | undefined {
  const { grantId } = record;
  const tag = placementTag(grantId);
  if (tag === undefined || tag !== recordTag(record.clientId, record.subscriberId)) return undefined;
  const random = grantId.slice(tag.length + 1);
  return random.length > 16 ? `${random.slice(0, 8)}.${random.slice(8)}` : undefined;
}

/** What a renewed record keeps of the grant ids its tokens may carry besides its own (see `rekeyed`). */
function formerOf(previous: ConsentRecord): { formerGrantId?: string } {
  if (rekeyedGrantId(previous) !== undefined) return { formerGrantId: previous.grantId };
  return typeof previous.formerGrantId === 'string' ? { formerGrantId: previous.formerGrantId } : {};
}

function entryOf(clientId: string, purpose: string, scope: string): string {
  return [clientId, purpose, scope].map(encodeURIComponent).join('|');
}

function recordId(clientId: string, subscriberId: string, purpose: string, scope: string): string {
  return `${recordTag(clientId, subscriberId)}.${[clientId, subscriberId, purpose, scope].map(encodeURIComponent).join('|')}`;
}

/** Where the last withdrawal of a (client, subscriber, purpose, scope) is kept: beside the live record. */
function withdrawnId(clientId: string, subscriberId: string, purpose: string, scope: string): string {
  return `${recordTag(clientId, subscriberId)}.withdrawn|${[clientId, subscriberId, purpose, scope].map(encodeURIComponent).join('|')}`;
}

function subscriberIds(subscriberId: string): { index: string; lock: string } {
  const tag = sha256(`subscriber|${encodeURIComponent(subscriberId)}`).slice(0, 8);
  return {
    index: `${tag}.index|${encodeURIComponent(subscriberId)}`,
    lock: `${tag}.lock|${encodeURIComponent(subscriberId)}`,
  };
}

/**
 * The built-in consent registry: records per (client, subscriber, purpose, scope) in the gateway's store, and per
 * subscriber an index of them for `list`. The store has no list operation, so the index is one record, updated
 * under a short lock (the store's `add`) so that concurrent decisions of one subscriber never lose an entry.
 * A withdrawn consent is kept, as evidence, for `withdrawnRetention` seconds (default a year): the last withdrawal
 * of each (client, purpose, scope).
 */
export class StoreConsentRegistry implements ConsentRegistry {
  private readonly withdrawnRetention: number;

  constructor(
    private readonly store: Store,
    private readonly policy: ConsentPolicy,
    private readonly now: () => number,
    options: { withdrawnRetention?: number } = {},
  ) {
    const retention = options.withdrawnRetention ?? WITHDRAWN_RETENTION;
    if (!Number.isInteger(retention) || retention < 1)
      throw new TypeError('withdrawnRetention must be a whole number of seconds, at least 1');
    this.withdrawnRetention = retention;
  }

  async grant(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]> {
    const decidedAt = this.now();
    const records = await Promise.all(
      subject.scopes.map(async (scope) => {
        const lifetime = this.policy.rule(subject.purpose, scope)?.consentLifetime ?? CONSENT_LIFETIME_DEFAULT;
        return this.decide(subject, scope, 'granted', decidedAt, lifetime, evidence);
      }),
    );
    await this.index(subject.subscriberId, records, [], []);
    return records;
  }

  async deny(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]> {
    const decidedAt = this.now();
    const records = await Promise.all(
      subject.scopes.map((scope) => this.decide(subject, scope, 'denied', decidedAt, DENIAL_LIFETIME, evidence)),
    );
    await this.index(subject.subscriberId, records, [], []);
    return records;
  }

  async revoke(subject: ConsentSubject, withdrawal: ConsentWithdrawal): Promise<ConsentRecord[]> {
    const found = await Promise.all(
      subject.scopes.map(async (scope) => {
        const id = recordId(subject.clientId, subject.subscriberId, subject.purpose, scope);
        const existing = await this.store.get<ConsentRecord>('consent', id);
        if (!existing) return [];
        const record = existing.value;
        // The evidence outlives the consent: written before the record goes, so a failure loses neither.
        if (record.status === 'granted') {
          const kept: ConsentRecord = { ...record, status: 'withdrawn', withdrawal };
          const keptId = withdrawnId(record.clientId, record.subscriberId, record.purpose, scope);
          await this.store.put('consent', keptId, kept, { ttl: this.withdrawnRetention });
        }
        await this.store.delete('consent', id);
        return [record];
      }),
    );
    const removed = found.flat();
    const withdrawn = removed.filter((r) => r.status === 'granted');
    await this.index(subject.subscriberId, [], removed, withdrawn);
    return removed;
  }

  async find(subject: ConsentSubject): Promise<ConsentRecord[]> {
    const records = await Promise.all(
      subject.scopes.map((scope) =>
        this.store.get<ConsentRecord>(
          'consent',
          recordId(subject.clientId, subject.subscriberId, subject.purpose, scope),
        ),
      ),
    );
    const now = this.now();
    const live = records.flatMap((r) => (r && r.value.expiresAt > now ? [r.value] : []));
    return Promise.all(live.map((record) => this.rekeyed(record, now)));
  }

  /**
   * A granted record whose grant id has the old, subscriber-derived tag, rewritten with the id rekeyed, before a
   * token can carry it; the old id stays as `formerGrantId`, so a withdrawal still reaches the tokens issued under it.
   */
  private async rekeyed(record: ConsentRecord, now: number): Promise<ConsentRecord> {
    const grantId = record.status === 'granted' ? rekeyedGrantId(record) : undefined;
    if (grantId === undefined) return record;
    const rewritten: ConsentRecord = { ...record, grantId, formerGrantId: record.grantId };
    const id = recordId(record.clientId, record.subscriberId, record.purpose, record.scope);
    await this.store.put('consent', id, rewritten, { ttl: Math.ceil((record.expiresAt - now) / 1000) });
    return rewritten;
  }

  async list(subscriberId: string): Promise<ConsentRecord[]> {
    const index = await this.store.get<SubscriberIndex>('consent', subscriberIds(subscriberId).index);
    if (!index) return [];
    return this.read(subscriberId, index.value.entries, recordId, true);
  }

  async history(subscriberId: string): Promise<ConsentRecord[]> {
    const index = await this.store.get<SubscriberIndex>('consent', subscriberIds(subscriberId).index);
    if (!index) return [];
    const [live, withdrawn] = await Promise.all([
      this.read(subscriberId, index.value.entries, recordId, true),
      this.read(subscriberId, index.value.withdrawn ?? [], withdrawnId, false),
    ]);
    return [...live, ...withdrawn];
  }

  /** The records of index entries; `live`: only those not expired (a withdrawn one lives by its store TTL). */
  private async read(
    subscriberId: string,
    entries: readonly string[],
    id: typeof recordId,
    live: boolean,
  ): Promise<ConsentRecord[]> {
    const records = await Promise.all(
      entries.map((entry) => {
        const [clientId, purpose, scope] = entry.split('|').map(decodeURIComponent) as [string, string, string];
        return this.store.get<ConsentRecord>('consent', id(clientId, subscriberId, purpose, scope));
      }),
    );
    const now = this.now();
    return records.flatMap((r) => (r && (!live || r.value.expiresAt > now) ? [r.value] : []));
  }

  private async decide(
    subject: ConsentSubject,
    scope: string,
    status: ConsentRecord['status'],
    decidedAt: number,
    lifetime: number,
    evidence: ConsentEvidence,
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
      grantId: status === 'granted' && stillGranted ? (rekeyedGrantId(previous) ?? previous.grantId) : newGrantId(),
      ...(status === 'granted' && stillGranted ? formerOf(previous) : {}),
      evidence,
    };
    await this.store.put('consent', id, record, { ttl: lifetime });
    return record;
  }

  /**
   * Adds and removes index entries under the subscriber's lock (`list` skips entries whose record expired);
   * `withdrawn` are the consents kept for `history`.
   */
  private async index(
    subscriberId: string,
    added: ConsentRecord[],
    removed: ConsentRecord[],
    withdrawn: ConsentRecord[],
  ): Promise<void> {
    const ids = subscriberIds(subscriberId);
    await this.lock(ids.lock);
    try {
      const current = (await this.store.get<SubscriberIndex>('consent', ids.index))?.value;
      const now = this.now();
      const entries = new Set(current && current.expiresAt > now ? current.entries : []);
      const kept = new Set(current && current.expiresAt > now ? (current.withdrawn ?? []) : []);
      for (const r of removed) entries.delete(entryOf(r.clientId, r.purpose, r.scope));
      for (const r of added) entries.add(entryOf(r.clientId, r.purpose, r.scope));
      for (const r of withdrawn) kept.add(entryOf(r.clientId, r.purpose, r.scope));
      const expiresAt = Math.max(
        current?.expiresAt ?? 0,
        ...added.map((r) => r.expiresAt),
        ...(withdrawn.length > 0 ? [now + this.withdrawnRetention * 1000] : []),
      );
      const ttl = Math.ceil((expiresAt - now) / 1000);
      if ((entries.size === 0 && kept.size === 0) || ttl <= 0) await this.store.delete('consent', ids.index);
      else {
        const value = { entries: [...entries], ...(kept.size > 0 ? { withdrawn: [...kept] } : {}), expiresAt };
        await this.store.put('consent', ids.index, value, { ttl });
      }
    } finally {
      await this.store.delete('consent', ids.lock);
    }
  }

  private async lock(id: string): Promise<void> {
    const until = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      if (await this.store.add('consent', id, {}, { ttl: LOCK_TTL })) return;
      if (Date.now() > until) throw new StoreUnavailableError("a subscriber's consent index stayed locked");
      // Decisions of one subscriber rarely meet; a short random wait keeps those that do from meeting again.
      await sleep(5 + Math.floor(Math.random() * 20));
    }
  }
}
