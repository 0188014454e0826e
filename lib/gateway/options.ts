import type { ConsentPolicy, ConsentRule } from '../consent/policy.js';
import type { ClientRegistry, RegisteredClient } from '../registry/clients.js';
import type { StaticSubscriber, Subscriber, SubscriberDirectory } from '../identity/subscribers.js';
import type { Store } from '../stores/store.js';
import type { JWK } from 'jose';

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
  /**
   * Private JWKs (RSA ≥ 2048 bits, EC P-256/P-384/P-521 or Ed25519) that sign ID tokens and JWT access
   * tokens. The first signs; all are published at `{issuer}/jwks` and verify, so a key can be rotated in
   * ahead of use and an old one kept until its tokens expire. `kid`: the JWK's, else its RFC 7638
   * thumbprint. Without keys, when something needs signing, an RS256 key is generated for development
   * (with a warning: tokens stop verifying on restart and across instances).
   */
  signingKeys?: JWK[];
  /** Issue an ID token when `openid` is in the granted scope. Default false. */
  idTokens?: boolean;
  /** `opaque` (default): random, stored hashed. `jwt`: RFC 9068 `at+jwt`, verifiable offline with the JWKS. */
  accessTokenFormat?: 'opaque' | 'jwt';
  /** `aud` of JWT access tokens (the service APIs). Default: the issuer. */
  accessTokenAudience?: string;
  /**
   * Salt of the pairwise `sub` (ID tokens, introspection). Keep it secret and stable: changing it changes
   * every `sub`. Default: random per process, with a warning.
   */
  pairwiseSalt?: string;
  /** Realm in `WWW-Authenticate` challenges. Default: the issuer. */
  realm?: string;
  /** Largest accepted form body. Default `16kb`. */
  bodyLimit?: string | number;
  /** Reports unexpected internal errors (never request data). Default: one line on stderr. */
  onError?: (error: unknown) => void;
  /** Milliseconds clock, for tests. Default `Date.now`. */
  now?: () => number;
}
