/**
 * The HTTP Consent Master adapter of docs/consent.md, as the contract suite runs it: the text below the import is
 * the docs' block (registry.test.ts checks that they stay the same).
 */
import type {
  ConsentEvidence,
  ConsentRecord,
  ConsentRegistry,
  ConsentSubject,
  ConsentWithdrawal,
} from '../../lib/index.js';

/** The operator's Consent Master behind its REST API; records travel as JSON in the shape of ConsentRecord. */
export class HttpConsentMaster implements ConsentRegistry {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  grant(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents', { ...subject, status: 'granted', evidence });
  }

  deny(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents', { ...subject, status: 'denied', evidence });
  }

  /** The Consent Master keeps what it removes as `withdrawn`, with `withdrawal`, for `history`. */
  revoke(subject: ConsentSubject, withdrawal: ConsentWithdrawal): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents/revoke', { ...subject, withdrawal });
  }

  find(subject: ConsentSubject): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents/find', subject);
  }

  list(subscriberId: string): Promise<ConsentRecord[]> {
    return this.call('GET', `subscribers/${encodeURIComponent(subscriberId)}/consents`);
  }

  history(subscriberId: string): Promise<ConsentRecord[]> {
    return this.call('GET', `subscribers/${encodeURIComponent(subscriberId)}/consents/history`);
  }

  private async call(method: 'GET' | 'POST', path: string, body?: object): Promise<ConsentRecord[]> {
    const res = await fetch(new URL(path, this.baseUrl), {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(5000),
    });
    // The status only: the path and the body name a subscriber, which stays out of errors and logs.
    if (!res.ok) throw new Error(`the Consent Master answered ${res.status}`);
    return (await res.json()) as ConsentRecord[];
  }
}
