import type {
  ConsentEvidence,
  ConsentRecord,
  ConsentRegistry,
  ConsentSubject,
  ConsentWithdrawal,
} from '../consent/registry.js';
import type { EventHub } from '../ops/events.js';
import type { Revocations } from './tokens/revocations.js';

/** Who ended a consent by refusing in its place, and how: from the refusal's own evidence. */
function refusal(evidence: ConsentEvidence): Omit<ConsentWithdrawal, 'at'> {
  if (evidence.method === 'registry') return { by: 'registry', via: 'registry' };
  return { by: 'subscriber', via: evidence.method === 'out_of_band' ? 'api' : 'consent_page' };
}

/** What the records say about a request, all scopes together. */
export type ConsentState =
  | { state: 'granted'; grantIds: string[] }
  | { state: 'denied'; decidedAt: number }
  | { state: 'none' };

/**
 * The consent registry as the gateway uses it, whichever implementation holds the records: every consent that
 * goes (withdrawn, or superseded by a refusal) takes the tokens issued under it at once, on one path: the
 * revocation list (`Revocations.revokeGrants`), which also reaches JWT access tokens verified with no store read.
 */
export class Consents {
  constructor(
    readonly registry: ConsentRegistry,
    private readonly revocations: Revocations,
    private readonly events: EventHub,
    private readonly now: () => number,
  ) {}

  grant(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]> {
    return this.registry.grant(subject, evidence);
  }

  /**
   * A refusal supersedes a consent: the tokens issued under the consent go with it, and the consent is kept as
   * withdrawn by whoever refused (its evidence outlives it) before the refusal replaces it.
   */
  async deny(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]> {
    const before = await this.registry.find(subject);
    const granted = before.filter((r) => r.status === 'granted').map((r) => r.scope);
    if (granted.length > 0)
      await this.registry.revoke({ ...subject, scopes: granted }, { ...refusal(evidence), at: this.now() });
    const records = await this.registry.deny(subject, evidence);
    await this.withdrawn(before);
    return records;
  }

  /**
   * Removes the records and revokes every token issued under them; answers what was on record. `withdrawal` says
   * who withdrew and how (default: the operator, through the API); its time is now.
   */
  async revoke(
    subject: ConsentSubject,
    withdrawal: Omit<ConsentWithdrawal, 'at'> = { by: 'operator', via: 'api' },
  ): Promise<ConsentRecord[]> {
    const removed = await this.registry.revoke(subject, { ...withdrawal, at: this.now() });
    await this.withdrawn(removed);
    return removed;
  }

  /**
   * Every record of a subscriber the registry holds, withdrawn ones included (a registry without `history`: the
   * live ones).
   */
  async history(subscriberId: string): Promise<ConsentRecord[]> {
    if (this.registry.history === undefined) return this.list(subscriberId);
    return (await this.registry.history(subscriberId)).filter((r) => r.subscriberId === subscriberId);
  }

  /** The live records of the subject's scopes. */
  async find(subject: ConsentSubject): Promise<ConsentRecord[]> {
    const now = this.now();
    return (await this.registry.find(subject)).filter((r) => r.expiresAt > now);
  }

  /** Every live record of a subscriber. */
  async list(subscriberId: string): Promise<ConsentRecord[]> {
    const now = this.now();
    return (await this.registry.list(subscriberId)).filter((r) => r.subscriberId === subscriberId && r.expiresAt > now);
  }

  /** Granted only when every scope is granted and live; denied when any scope was refused. */
  async state(subject: ConsentSubject): Promise<ConsentState> {
    const records = (await this.find(subject)).filter((r) => subject.scopes.includes(r.scope));
    const denied = records.filter((r) => r.status === 'denied');
    if (denied.length > 0) return { state: 'denied', decidedAt: Math.max(...denied.map((r) => r.decidedAt)) };
    const granted = records.filter((r) => r.status === 'granted');
    if (new Set(granted.map((r) => r.scope)).size === subject.scopes.length)
      return { state: 'granted', grantIds: granted.map((r) => r.grantId) };
    return { state: 'none' };
  }

  /**
   * Consents that ended (here or in a Consent Master on its own): the tokens issued under the granted ones are
   * revoked at once. Records that were refusals carry no tokens.
   */
  async withdrawn(records: readonly ConsentRecord[]): Promise<void> {
    const granted = records.filter((r) => r.status === 'granted' && typeof r.grantId === 'string' && r.grantId !== '');
    if (granted.length === 0) return;
    // A record rekeyed from an older version's grant id keeps it: tokens issued before carry that one.
    const former = granted.flatMap((r) => (typeof r.formerGrantId === 'string' ? [r.formerGrantId] : []));
    await this.revocations.revokeGrants([...granted.map((r) => r.grantId), ...former]);
    for (const record of granted) {
      this.events.emit('token.revoked', {
        clientId: record.clientId,
        subscriberId: record.subscriberId,
        purpose: record.purpose,
        reason: 'consent_withdrawn',
      });
    }
  }
}
