/**
 * The HTTP Consent Master adapter of docs/consent.md, as the contract suite runs it: the text below the import is
 * the docs' block (registry.test.ts checks that they stay the same).
 */
import type { ConsentRecord, ConsentRegistry, ConsentSubject } from '../../lib/index.js';

/** The operator's Consent Master behind its REST API; records travel as JSON in the shape of ConsentRecord. */
export class HttpConsentMaster implements ConsentRegistry {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  grant(subject: ConsentSubject): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents', { ...subject, status: 'granted' });
  }

  deny(subject: ConsentSubject): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents', { ...subject, status: 'denied' });
  }

  revoke(subject: ConsentSubject): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents/revoke', subject);
  }

  find(subject: ConsentSubject): Promise<ConsentRecord[]> {
    return this.call('POST', 'consents/find', subject);
  }

  list(subscriberId: string): Promise<ConsentRecord[]> {
    return this.call('GET', `subscribers/${encodeURIComponent(subscriberId)}/consents`);
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
