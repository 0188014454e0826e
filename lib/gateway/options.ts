import type { ConsentPolicy, ConsentRule } from '../consent/policy.js';
import type { ClientRegistry, RegisteredClient } from '../registry/clients.js';
import type { StaticSubscriber, Subscriber, SubscriberDirectory } from '../identity/subscribers.js';
import type { Store } from '../stores/store.js';

/** Lifetimes in seconds. Defaults are protocol.md's. */
export interface Lifetimes {
  /** Authorization code. Default 60. */
  code?: number;
  /** auth_req_id. Default 120. */
  authReqId?: number;
  /** Minimum seconds between CIBA polls. Default 2. */
  pollInterval?: number;
  /** Access token. Default 3600. */
  accessToken?: number;
  /** How long an expired auth_req_id is remembered, to answer expired_token rather than invalid_grant. Default 600. */
  expiredRetention?: number;
}

/** What a backchannel hook is told about a request. */
export interface BackchannelRequest {
  auth_req_id: string;
  clientId: string;
  clientName?: string;
  subscriber: Subscriber;
  purpose: string;
  scopes: string[];
  /** The requested scope string. */
  scope: string;
  /** Epoch ms at which the auth_req_id expires. */
  expiresAt: number;
}

export type BackchannelDecision = 'approve' | 'deny';

export interface BackchannelOptions {
  /**
   * Authenticates the subscriber or otherwise decides the request, asynchronously: bc-authorize has already
   * answered 200, and polls answer authorization_pending until this resolves. Without it, requests are
   * approved at once (consent, where the policy needs it, is still required).
   */
  authorize?: (request: BackchannelRequest) => Promise<BackchannelDecision>;
  /**
   * Called when consent is needed and not on record: tell the subscriber (SMS, app push, a link to a consent
   * page). Consent is then recorded out-of-band with `netauth.consent.grant()` or `.deny()`.
   */
  onConsentRequired?: (request: BackchannelRequest) => void | Promise<void>;
}

export interface SandboxOptions {
  /** Lines that may be used, as `+<E.164>` or `tel:+<E.164>`. Any other line: access_denied. */
  allowList: string[];
}

export interface NetAuthOptions {
  /**
   * The issuer identifier: the absolute URL where the router is mounted, e.g.
   * `https://gw.example.com/apigateway`. Endpoints and discovery are published under it.
   */
  issuer: string;
  /** The developer portal's registrations: an implementation, or a static list. */
  clients: ClientRegistry | readonly RegisteredClient[];
  /** The operator's subscribers: an implementation, or a static table. */
  subscribers: SubscriberDirectory | readonly StaticSubscriber[];
  /** purpose × scope → legal basis: an implementation, or a list of rules. */
  consentPolicy: ConsentPolicy | readonly ConsentRule[];
  /** Where state lives. Default: a new MemoryStore (one process, nothing survives a restart). */
  store?: Store;
  lifetimes?: Lifetimes;
  backchannel?: BackchannelOptions;
  /** Sandbox mode: no network identification; the login_hint names an allow-listed line. */
  sandbox?: SandboxOptions;
  /** Realm in `WWW-Authenticate` challenges. Default: the issuer. */
  realm?: string;
  /** Largest accepted form body. Default `16kb`. */
  bodyLimit?: string | number;
  /** Reports unexpected internal errors (never request data). Default: one line on stderr. */
  onError?: (error: unknown) => void;
  /** Milliseconds clock, for tests. Default `Date.now`. */
  now?: () => number;
}
