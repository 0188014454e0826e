/**
 * The consent registry contract: where the subscribers' consent decisions live. The built-in implementation keeps
 * them in the gateway's store (`StoreConsentRegistry`, lib/consent/records.ts, the default); an operator who runs a
 * Consent Master (the CAMARA profile's term) passes an adapter to it as `consentRegistry`. Every implementation
 * passes one contract suite (test/consent/registry-contract.ts).
 *
 * The registry only keeps records. Revoking the tokens issued under a consent is the gateway's, on one path for
 * every implementation: whatever `revoke` or `deny` reports as gone, the gateway revokes at once (and a Consent
 * Master that withdraws a consent on its own tells the gateway through `netauth.consent.withdrawn(records)`).
 */

/** One subscriber's decision for one (client, purpose, scope). */
export interface ConsentRecord {
  clientId: string;
  subscriberId: string;
  purpose: string;
  scope: string;
  status: 'granted' | 'denied';
  /** Epoch ms of the decision. */
  decidedAt: number;
  /** Epoch ms after which the record no longer counts. */
  expiresAt: number;
  /**
   * Tokens issued under this consent carry this grant id; revoking the consent revokes them. Any string unique to
   * this consent, random (clients read it in JWT access tokens: never derive it from the subscriber or the
   * client); a grant renewed while it is live keeps its id, so a later withdrawal still reaches every token.
   * (`formerGrantId`, when present, is an earlier id of the same consent that tokens may still carry: revoked
   * with it.)
   */
  grantId: string;
  [key: string]: string | number;
}

/** Whose consent, for what: a client, a subscriber (the directory's id), a DPV purpose and its API scopes. */
export interface ConsentSubject {
  clientId: string;
  subscriberId: string;
  purpose: string;
  scopes: readonly string[];
}

/** The operations the gateway needs; each is async, and a failure rejects (the request answers 503 or 500). */
export interface ConsentRegistry {
  /** Records a grant for each scope; one record per scope, `status: 'granted'`. */
  grant(subject: ConsentSubject): Promise<ConsentRecord[]>;
  /** Records a refusal for each scope (replacing a grant); one record per scope, `status: 'denied'`. */
  deny(subject: ConsentSubject): Promise<ConsentRecord[]>;
  /** Removes the records of these scopes; answers the records removed (none when nothing was on record). */
  revoke(subject: ConsentSubject): Promise<ConsentRecord[]>;
  /** The live records (not expired, granted or denied) of these scopes. */
  find(subject: ConsentSubject): Promise<ConsentRecord[]>;
  /** Every live record of one subscriber, whatever the client, purpose and scope: the subscriber's consents page. */
  list(subscriberId: string): Promise<ConsentRecord[]>;
}
