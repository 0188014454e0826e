/**
 * The consent registry contract: where the subscribers' consent decisions live. The built-in implementation keeps
 * them in the gateway's store (`StoreConsentRegistry`, lib/consent/records.ts, the default); an operator who runs a
 * Consent Master (the CAMARA profile's term) passes an adapter to it as `consentRegistry`. Every implementation
 * passes one contract suite (test/consent/registry-contract.ts).
 *
 * The registry only keeps records. Revoking the tokens issued under a consent is the gateway's, on one path for
 * every implementation: whatever `revoke` or `deny` reports as gone, the gateway revokes at once (and a Consent
 * Master that withdraws a consent on its own tells the gateway through `netauth.consent.withdrawn(records)`).
 *
 * Each record also says what demonstrates it (GDPR Art. 7(1)): `evidence` for the decision, `withdrawal` for its
 * end. Both are optional on read: records written before they existed, or by a registry that keeps none, lack them.
 */
import type { SubscriberIdentification } from '../identity/identification.js';

/**
 * How a decision was captured: `page` (the consent page), `page_confirmed` (the consent page, confirmed with a code
 * through the operator's channel), `out_of_band` (`netauth.consent.grant`/`deny`: the operator's own app, shop or
 * call centre), `registry` (an outside Consent Master, on its own).
 */
export type ConsentCaptureMethod = 'page' | 'page_confirmed' | 'out_of_band' | 'registry';

/** The operator's channel a confirmation code went through (`consentConfirmation.channel`). */
export type ConsentConfirmationChannel = 'sms' | 'push' | 'ussd' | 'operator';

/** What the subscriber was shown: the SHA-256 (hex) of the notice's rendered text, and the operator's version of it. */
export type ConsentNotice = { sha256: string; version: string };

/** What demonstrates a decision; its time is the record's `decidedAt`. */
export type ConsentEvidence = {
  method: ConsentCaptureMethod;
  /** The notice shown (the consent page's text; for `out_of_band`, what the operator says it showed). */
  notice?: ConsentNotice;
  /** How the subscriber was identified: the kind only, never the address or the number. */
  identifiedBy?: SubscriberIdentification;
  /** The confirmation that made it count (`page_confirmed`): a one-time code, through this channel. */
  confirmation?: { method: 'one_time_code'; channel: ConsentConfirmationChannel };
};

/**
 * Who ended a consent and how: the subscriber on the consents page (or by a refusal that replaced it), the client
 * or the operator through `netauth.consent.revoke` (or the operator's levers), or an outside registry on its own.
 */
export type ConsentWithdrawal = {
  /** Epoch ms. */
  at: number;
  by: 'subscriber' | 'client' | 'operator' | 'registry';
  /** `consent_page`: a refusal there replaced the consent. */
  via: 'consents_page' | 'consent_page' | 'api' | 'registry';
  /** Why, when the operator said (e.g. `number_recycled`). */
  reason?: string;
};

/** One subscriber's decision for one (client, purpose, scope). */
export type ConsentRecord = {
  clientId: string;
  subscriberId: string;
  purpose: string;
  scope: string;
  /** `withdrawn` only in `history`: a consent that `revoke` removed, kept as evidence. */
  status: 'granted' | 'denied' | 'withdrawn';
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
  /** What demonstrates the decision (absent on records written before it was kept). */
  evidence?: ConsentEvidence;
  /** On a `withdrawn` record: who withdrew it and how. */
  withdrawal?: ConsentWithdrawal;
  /** An earlier grant id of the same consent that tokens may still carry (see `grantId`). */
  formerGrantId?: string;
};

/** Whose consent, for what: a client, a subscriber (the directory's id), a DPV purpose and its API scopes. */
export interface ConsentSubject {
  clientId: string;
  subscriberId: string;
  purpose: string;
  scopes: readonly string[];
}

/** The operations the gateway needs; each is async, and a failure rejects (the request answers 503 or 500). */
export interface ConsentRegistry {
  /** Records a grant for each scope, with its evidence as given; one record per scope, `status: 'granted'`. */
  grant(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]>;
  /** Records a refusal for each scope (replacing a grant), with its evidence; one record per scope, `status: 'denied'`. */
  deny(subject: ConsentSubject, evidence: ConsentEvidence): Promise<ConsentRecord[]>;
  /**
   * Removes the records of these scopes; answers the records removed, as they were (none when nothing was on
   * record). The granted ones are kept for `history` as `withdrawn`, with `withdrawal`.
   */
  revoke(subject: ConsentSubject, withdrawal: ConsentWithdrawal): Promise<ConsentRecord[]>;
  /** The live records (not expired, granted or denied) of these scopes. */
  find(subject: ConsentSubject): Promise<ConsentRecord[]>;
  /** Every live record of one subscriber, whatever the client, purpose and scope: the subscriber's consents page. */
  list(subscriberId: string): Promise<ConsentRecord[]>;
  /**
   * Every record of one subscriber the registry still holds, with its evidence: the live ones and the withdrawn
   * ones (`netauth.consent.export`, GDPR Art. 15 and 20). Optional: without it the export has the live records only.
   */
  history?(subscriberId: string): Promise<ConsentRecord[]>;
}
