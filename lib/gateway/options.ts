import type { SubscriberIdentification } from '../identity/identification.js';
import type { ConsentPolicy, ConsentRule } from '../consent/policy.js';
import type { ConsentRegistry } from '../consent/registry.js';
import type { ClientRegistry, RegisteredClient } from '../registry/clients.js';
import type { StaticSubscriber, Subscriber, SubscriberDirectory } from '../identity/subscribers.js';
import type { Store } from '../stores/store.js';
import type { JWK } from 'jose';
import type { RateLimitOptions } from '../ops/rate-limits.js';
import type { NetAuthLogger } from '../ops/logging.js';
import type { ConsentConfirmationOptions, SendConsentConfirmation } from '../consent/confirmation.js';

/**
 * The CAMARA profile's DPoP extension claims (Security and Interoperability Profile, "Request Binding to DPoP
 * Proofs"): base64url SHA-256, without padding, of the raw query string as received and of the body's bytes.
 */
export type DpopHashClaim = 'camara:qh' | 'camara:bh';

/** How a client's `jwksUri` is fetched. */
export interface ClientJwksOptions {
  /**
   * Milliseconds one fetch may take, connection to last byte.
   * @defaultValue 5000
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`jwks_uri`)
   */
  fetchTimeout?: number;
  /**
   * Largest JWK Set accepted, in bytes.
   * @defaultValue 65536
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`jwks_uri`)
   */
  maxBytes?: number;
  /**
   * Seconds a fetched JWK Set is used before it is fetched again.
   * @defaultValue 600
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`jwks_uri`)
   */
  cacheMaxAge?: number;
  /**
   * Origins (`scheme://host[:port]`) whose `jwksUri`s may use `http:` or lead to private, loopback, link-local or
   * unique-local addresses: a key server inside the operator's network, a development server.
   * @defaultValue none: only `https:` to public addresses is fetched, at the address checked when the host was resolved
   */
  internalOrigins?: string[];
}

/**
 * The wording of the confirmation step (a consent rule with `confirmation: 'required'`, and the consents page
 * when `sendConsentConfirmation` is configured): part of `consentPage.texts`, so it is translated and replaced
 * like the rest of the page.
 */
export interface ConfirmationTexts {
  /** Heading of the page that asks for the code. `{client}` and `{operator}` are replaced. */
  codeTitle: string;
  /** Under it. `{client}` and `{operator}` are replaced. */
  codeIntro: string;
  /** Label of the code field. */
  codeLabel: string;
  /** Hint under the label. */
  codeHint: string;
  /** The button that submits the code (and allows). */
  confirm: string;
  /** A wrong code, attempts left. `{attempts}` is replaced by their number. */
  wrongCode: string;
  /** Something other than the code's digits. */
  malformedCode: string;
  /** Heading of the page shown when the code could not be sent. */
  sendFailedTitle: string;
  /** Its text. `{client}` and `{operator}` are replaced. */
  sendFailed: string;
  /** Its button that sends a new code. */
  resend: string;
  /** Under the code page's heading on the consents page. `{operator}` is replaced. */
  consentsCodeIntro: string;
  /** Heading of the consents page before a code is sent. `{operator}` is replaced. */
  consentsSendTitle: string;
  /** The consents page's text before a code is sent: what it is for. `{operator}` is replaced. */
  consentsSendIntro: string;
  /** The consents page's button that sends the first code. */
  sendCode: string;
  /** The consents page's text when the code could not be sent. `{operator}` is replaced. */
  consentsSendFailed: string;
  /** The consents page's button that sends a new code. */
  newCode: string;
  /** Heading of the consents page's page when its code cannot be used any more (wrong too often, expired). */
  codeEndedTitle: string;
  /** Its text. `{operator}` is replaced. */
  codeEnded: string;
  /** Heading of the page shown when the subscriber was sent as many codes as `codesPerSubscriber` allows. */
  codesLimitTitle: string;
  /** Its text. `{operator}` and `{minutes}` (until a code may be sent again) are replaced. */
  codesLimit: string;
  /**
   * The text message that carries a consent's code (`context.message` of `sendConsentConfirmation`):
   * `{operator}`, `{client}`, `{scopes}` (the scopes' `message` labels), `{purpose}` (the purpose's) and `{minutes}`
   * are replaced; `{code}` is left for the hook, which puts the code there.
   */
  consentMessage: string;
  /** The same for the consents page's code: `{operator}` and `{minutes}` are replaced, `{code}` is left. */
  consentsMessage: string;
}

/** Lifetimes in seconds. Defaults are docs/protocol.md's. */
export interface Lifetimes {
  /**
   * Authorization code.
   * @defaultValue 60
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2 | RFC 6749 §4.1.2} (a short lifetime, at most 10 minutes)
   */
  code?: number;
  /**
   * auth_req_id.
   * @defaultValue 120
   * @see {@link https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html | OpenID CIBA Core} §7.3 (`expires_in`)
   */
  authReqId?: number;
  /**
   * Minimum seconds between CIBA polls.
   * @defaultValue 2
   * @see {@link https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html | OpenID CIBA Core} §7.3 (`interval`), §11 (`slow_down`)
   */
  pollInterval?: number;
  /**
   * Access token. A consent policy rule may shorten it for its scope (`accessTokenLifetime`).
   * @defaultValue 3600
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.1 | RFC 6749 §5.1} (`expires_in`)
   */
  accessToken?: number;
  /**
   * Access token of the backend grants, client credentials and JWT bearer (no subscriber interaction), at most
   * `accessToken`.
   * @defaultValue `accessToken`; with `profile: 'camara'`, 300 (the profile's "short-lived")
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.4 | RFC 6749 §4.4}
   * @see {@link https://www.rfc-editor.org/rfc/rfc7523#section-2.1 | RFC 7523 §2.1}
   */
  backendAccessToken?: number;
  /**
   * Refresh token (`offline_access`, code and CIBA grants): each one lives this long from its issue, and is replaced by
   * a new one at every use (rotation).
   * @defaultValue 1209600 (14 days)
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-6 | RFC 6749 §6}
   * @see {@link https://www.rfc-editor.org/rfc/rfc9700#section-4.14.2 | RFC 9700 §4.14.2} (rotation)
   */
  refreshToken?: number;
  /**
   * How long an expired auth_req_id is remembered, to answer expired_token rather than invalid_grant.
   * @defaultValue 600
   * @see {@link https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html | OpenID CIBA Core} §11 (`expired_token`)
   */
  expiredRetention?: number;
  /**
   * How long the consent page waits for the subscriber's answer (frontend flow).
   * @defaultValue 600
   */
  interaction?: number;
  /**
   * How long a redeemed code or approved auth_req_id answers the same client's retry with the same tokens: a retry
   * after a reply lost to a slow store (503) gets its answer instead of invalid_grant.
   * @defaultValue 30
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2 | RFC 6749 §4.1.2} (a code is used once)
   */
  redemptionRetry?: number;
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
  /**
   * How the client named the subscriber (`tel`, `ipport`, `operatortoken`): an `authorize` hook that authenticates
   * the subscriber knows what it is vouching for.
   */
  identifiedBy: SubscriberIdentification;
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

/**
 * Network identification for the frontend flow. The device address is `req.ip`, so Express's `trust proxy`
 * setting decides which hop counts: set it to exactly the operator's own proxies.
 */
export interface NetworkOptions {
  /** The operator's mobile address ranges in CIDR notation (`"10.0.0.0/8"`, `"2001:db8::/32"`). Anything else is not the mobile network. */
  mobileRanges: string[];
  /**
   * Request header carrying the device's source port, set (and overwritten) by the operator's edge, for
   * subscribers behind CGNAT, e.g. `x-source-port`. Believed only when the connection's peer is a hop
   * `trust proxy` trusts (from any other peer it is ignored). Without it the directory is asked by IP alone.
   */
  portHeader?: string;
}

/** Wording of the subscriber's consents page (`GET {issuer}/consents`). */
export interface SubscriberConsentsTexts {
  /** Title and heading. */
  consentsTitle: string;
  /** Under the heading. `{operator}` is replaced. */
  consentsIntro: string;
  /** When nothing is on record. */
  consentsEmpty: string;
  /** Before each consent's date. */
  consentsGiven: string;
  /** After the date, for a consent given on the consent page. `{operator}` is replaced. */
  consentsViaPage: string;
  /** After that, for one confirmed with a code. `{channel}` is replaced (SMS, push notification, USSD, or the operator). */
  consentsConfirmed: string;
  /** After the date, for a consent the operator recorded (`netauth.consent.grant`). `{operator}` is replaced. */
  consentsViaOperator: string;
  /** After the date, for a consent an outside Consent Master recorded. `{operator}` is replaced. */
  consentsViaRegistry: string;
  /** Each consent's button. */
  withdraw: string;
  /** Said after a withdrawal. `{client}` is replaced. */
  withdrawn: string;
  /** Heading of the page for a request the network does not identify. */
  notIdentifiedTitle: string;
  /** Its text. `{operator}` is replaced. */
  notIdentified: string;
}

/** Wording of the consent page and the consents page; every text may be replaced (e.g. to translate it). */
export interface ConsentPageTexts extends SubscriberConsentsTexts, ConfirmationTexts {
  /** Page title and heading. `{client}` is replaced by the application's name. */
  title: string;
  /** Introduces the purpose. `{client}` and `{operator}` are replaced. */
  intro: string;
  purposeLabel: string;
  scopeLabel: string;
  allow: string;
  deny: string;
  /** Under the buttons. `{operator}` is replaced. */
  footer: string;
  /** The footer's link to the subscriber's consents page. */
  consentsLink: string;
  /** Heading of error pages. */
  errorTitle: string;
  /** An error page's text for a request that is not valid (a stale link, a refused form). `{operator}` is replaced. */
  errorRequest: string;
  /** For `access_denied` (e.g. answered from another line). `{operator}` is replaced. */
  errorDenied: string;
  /** When the gateway is busy or its store unreachable. `{operator}` is replaced. */
  errorUnavailable: string;
  /** For an internal error. `{operator}` is replaced. */
  errorServer: string;
  /** Before the error's code and description, in the error page's small detail line. */
  errorDetail: string;
  /** The page shown again after Allow (the browser's Back button). `{client}` and `{operator}` are replaced. */
  answeredAllow: string;
  /** The same after Deny. */
  answeredDeny: string;
  /** Its link to the application (the origin of the redirect_uri). `{client}` is replaced. */
  returnLink: string;
}

/**
 * The operator's words for a purpose or a scope: one text for every place, or one per place where they differ:
 * `request` (the consent page and its code page), `list` (the consents page) and `message` (the text message of
 * `sendConsentConfirmation`); `list` and `message` default to `request`.
 */
export type LabelWording = string | { request: string; list?: string; message?: string };

/** Purposes and scopes in the operator's words, in one language. Unlabelled ones keep the built-in words. */
export interface PageLabels {
  /**
   * DPV purpose (`FraudPreventionAndDetection`) → wording.
   * @defaultValue the DPV name in English words
   */
  purposes?: Record<string, LabelWording>;
  /**
   * API scope (`sim-swap`) → wording.
   * @defaultValue the consent rule's `description`, else the scope
   */
  scopes?: Record<string, LabelWording>;
}

/** Another language of the subscriber pages: its texts (over the built-in English) and labels. */
export interface PageLanguageOptions {
  /** The pages' wording in this language; a text not given stays the built-in English one. */
  texts?: Partial<ConsentPageTexts>;
  /** Purposes and scopes in this language. */
  labels?: PageLabels;
}

/** Branding of the consent page (and of the error pages of the frontend flow). */
export interface ConsentPageOptions {
  /**
   * Shown in the header and the texts.
   * @defaultValue `"Your mobile operator"`
   */
  operatorName?: string;
  /**
   * CSS colour of the header bar and the Allow button: `#rgb`, `#rrggbb`, `rgb(...)`, `hsl(...)` or a colour name.
   * @defaultValue `#0b57d0`
   */
  primaryColor?: string;
  /**
   * Text colour on the primary colour.
   * @defaultValue `#ffffff`
   */
  primaryTextColor?: string;
  /**
   * Page background.
   * @defaultValue `#ffffff`
   */
  backgroundColor?: string;
  /**
   * Body text.
   * @defaultValue `#1f1f1f`
   */
  textColor?: string;
  /**
   * Logo: an `https:` URL, a path on this host (`/assets/logo.svg`) or a `data:image/...` URI. The page has
   * no other external source; an absolute URL is allowed by exact match in the page's CSP `img-src`.
   */
  logoUrl?: string;
  /**
   * `lang` of the page.
   * @defaultValue `en`
   * @see {@link https://www.rfc-editor.org/rfc/rfc5646 | RFC 5646} (BCP 47 language tags)
   */
  language?: string;
  /** Link to the operator's privacy notice, shown under the buttons. */
  privacyPolicyUrl?: string;
  /** Replacements for the page's wording in `language` (e.g. a translation); the rest stays English. */
  texts?: Partial<ConsentPageTexts>;
  /** Purposes and scopes in the operator's words, in `language`. */
  labels?: PageLabels;
  /**
   * More languages the subscriber pages speak, by BCP 47 tag (`{ es: { texts, labels } }`): each request gets the one
   * its `Accept-Language` prefers (exact tag, then the primary subtag), else `language`. The text message's wording
   * follows the language of the request that sends it.
   * @defaultValue none (always `language`)
   */
  languages?: Record<string, PageLanguageOptions>;
  /**
   * Your version of the consent page's wording, kept in each consent record beside the SHA-256 of the text the
   * subscriber saw (`evidence.notice`): change it when you change the wording.
   * @defaultValue `'1'`
   */
  noticeVersion?: string;
  /**
   * Name of the session cookie that binds the page to the browser.
   * @defaultValue `netauth.sid`
   * @see {@link https://www.rfc-editor.org/rfc/rfc6265#section-4.1 | RFC 6265 §4.1}
   */
  cookieName?: string;
  /**
   * Path of the session cookie. Must cover where the router is mounted.
   * @defaultValue the issuer's path
   * @see {@link https://www.rfc-editor.org/rfc/rfc6265#section-5.2.4 | RFC 6265 §5.2.4}
   */
  cookiePath?: string;
  /**
   * Secret(s) signing the session cookie (the first signs, all verify, for rotation). Give the same secret to every
   * instance behind a load balancer.
   * @defaultValue random per process (one instance only; with a shared `store`, a warning, in production mode an error)
   */
  cookieSecret?: string | string[];
}

/**
 * `'camara'`: the CAMARA Security and Interoperability Profile's requirements, set at once: every client
 * `private_key_jwt`, ID tokens on, consent confirmed through `sendConsentConfirmation`, an `https:` issuer (or
 * loopback), no tolerance for an `iat` in the future, the guard's `errorFormat: 'camara'` by default, backend
 * access tokens 300 s by default. The README's table says, row by row, what it sets and refuses.
 */
export type NetAuthProfile = 'camara';

/**
 * `'production'`: what works only on one development machine is a start-up error naming the option, not a
 * warning. `'development'`: warnings only.
 */
export type NetAuthMode = 'production' | 'development';

export interface NetAuthOptions {
  /**
   * The issuer identifier: the absolute URL where the router is mounted, e.g. `https://gw.example.com/apigateway`.
   * Endpoints and discovery are published under it. `http:` only on this machine (localhost, 127.0.0.0/8, ::1) for
   * development: elsewhere a start-up warning, under `profile: 'camara'` or in production mode (`mode`) an error.
   * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-2 | RFC 8414 §2} (`issuer`)
   */
  issuer: string;
  /**
   * A profile whose requirements are set at once (`'camara'`); what it requires is a start-up error to turn off, what
   * it recommends stays overridable.
   * @defaultValue none
   */
  profile?: NetAuthProfile;
  /**
   * `'production'`: a generated signing key, a random `pairwiseSalt`, a per-process `consentPage.cookieSecret` with a
   * shared store and an `http:` issuer off this machine are start-up errors naming the option, not warnings.
   * `'development'` keeps them warnings, whatever `NODE_ENV` says.
   * @defaultValue `'production'` when `NODE_ENV` is `production` (Express's convention), else `'development'`
   */
  mode?: NetAuthMode;
  /** The developer portal's registrations: an implementation, or a static list. */
  clients: ClientRegistry | readonly RegisteredClient[];
  /** The operator's subscribers: an implementation, or a static table. */
  subscribers: SubscriberDirectory | readonly StaticSubscriber[];
  /** purpose × scope → legal basis: an implementation, or a list of rules. */
  consentPolicy: ConsentPolicy | readonly ConsentRule[];
  /**
   * Where state lives.
   * @defaultValue a new MemoryStore (one process, nothing survives a restart)
   */
  store?: Store;
  /**
   * Where consent records live: the operator's Consent Master behind the `ConsentRegistry` contract (docs/consent.md).
   * @defaultValue the store
   */
  consentRegistry?: ConsentRegistry;
  /** Lifetimes of codes, auth_req_ids and tokens, in seconds. */
  lifetimes?: Lifetimes;
  /**
   * Hooks of the backend flow (CIBA): deciding a request, telling the subscriber that consent is needed.
   * @see {@link https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html | OpenID CIBA Core}
   */
  backchannel?: BackchannelOptions;
  /**
   * Sandbox mode: no network identification; the login_hint names an allow-listed line.
   * @see {@link https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html | OpenID CIBA Core} §7.1 (`login_hint`)
   */
  sandbox?: SandboxOptions;
  /** How the frontend flow recognises the subscriber's device. Without it (and outside sandbox mode) no one is identified. */
  network?: NetworkOptions;
  /** Branding and cookie of the consent page. */
  consentPage?: ConsentPageOptions;
  /**
   * Sends a one-time code through the operator's own channel (SMS, push, USSD), which the handset's apps cannot
   * read: for a consent rule with `confirmation: 'required'` (the consent page asks for it), and, whenever this
   * hook is configured, for the subscriber's consents page, which lists nothing before the code comes back.
   * `context.for` tells the two apart. See docs/consent.md.
   */
  sendConsentConfirmation?: SendConsentConfirmation;
  /**
   * The code's lifetime (default 300 s), attempts (default 3), the hook's timeout (default 10000 ms) and the codes
   * sent per subscriber (default 5 per 900 s).
   */
  consentConfirmation?: ConsentConfirmationOptions;
  /**
   * Private JWKs (RSA ≥ 2048 bits, EC P-256/P-384/P-521 or Ed25519) that sign ID tokens and JWT access tokens. The
   * first signs; all are published at `{issuer}/jwks` and verify, so a key can be rotated in ahead of use and an old
   * one kept until its tokens expire. `kid`: the JWK's, else its RFC 7638 thumbprint. Without keys, when something
   * needs signing, an RS256 key is generated for development (with a warning: tokens stop verifying on restart and
   * across instances; in production mode, an error).
   * @see {@link https://www.rfc-editor.org/rfc/rfc7517 | RFC 7517} (JWK)
   * @see {@link https://www.rfc-editor.org/rfc/rfc7638 | RFC 7638} (thumbprint)
   */
  signingKeys?: JWK[];
  /**
   * Issue an ID token when `openid` is in the granted scope. `false` never grants `openid` (it is left out of the
   * granted scope), since OpenID Connect never grants it without an ID token.
   * @defaultValue true
   * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#IDToken | OpenID Connect Core §2}
   */
  idTokens?: boolean;
  /**
   * `opaque` (default): random, stored hashed. `jwt`: RFC 9068 `at+jwt`, verifiable offline with the JWKS.
   * @defaultValue `'opaque'`
   * @see {@link https://www.rfc-editor.org/rfc/rfc9068 | RFC 9068}
   */
  accessTokenFormat?: 'opaque' | 'jwt';
  /**
   * `aud` of JWT access tokens (the service APIs).
   * @defaultValue the issuer
   * @see {@link https://www.rfc-editor.org/rfc/rfc9068#section-2.2 | RFC 9068 §2.2} (`aud`)
   */
  accessTokenAudience?: string;
  /**
   * Salt of the pairwise `sub` (ID tokens, introspection). Keep it secret and stable: changing it changes every `sub`.
   * @defaultValue random per process, with a warning (in production mode, an error)
   * @see {@link https://openid.net/specs/openid-connect-core-1_0.html#PairwiseAlg | OpenID Connect Core §8.1}
   */
  pairwiseSalt?: string;
  /**
   * Seconds a client's clock may run ahead on client assertions, request objects and JWT-bearer assertions (`iat`,
   * `nbf` in the future). Under `profile: 'camara'` it applies to `nbf` only: the profile SHALL reject an `iat` in the
   * future, so `iat` gets none.
   * @defaultValue 5
   * @see {@link https://www.rfc-editor.org/rfc/rfc7523#section-3 | RFC 7523 §3}
   * @see {@link https://www.rfc-editor.org/rfc/rfc7519#section-4.1.5 | RFC 7519 §4.1.5}
   */
  clockTolerance?: number;
  /**
   * CAMARA's DPoP request binding: claims every DPoP proof must carry, at the token endpoint and every guarded route
   * (`'camara:qh'`, the query's hash; `'camara:bh'`, the body's), announced in discovery as
   * `camara_dpop_claims_required`. Present ones are verified whatever this says.
   * @defaultValue none
   * @see {@link https://www.rfc-editor.org/rfc/rfc9449#section-4.3 | RFC 9449 §4.3}
   */
  dpopClaimsRequired?: readonly DpopHashClaim[];
  /**
   * Realm in `WWW-Authenticate` challenges.
   * @defaultValue the issuer
   * @see {@link https://www.rfc-editor.org/rfc/rfc6750#section-3 | RFC 6750 §3}
   */
  realm?: string;
  /**
   * Largest accepted form body.
   * @defaultValue `16kb`
   */
  bodyLimit?: string | number;
  /**
   * How clients' `jwksUri`s are fetched (private_key_jwt, signed requests): `fetchTimeout` ms (default 5000),
   * `maxBytes` (default 64 KiB), `cacheMaxAge` seconds (default 600). An unknown `kid` is fetched again at once, at
   * most once per 10 s per client; a failed fetch, at most once a minute.
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`jwks_uri`)
   */
  clientJwks?: ClientJwksOptions;
  /**
   * Rate limits and brute-force protection on client authentication (429 with `Retry-After`; `slow_down` on CIBA
   * polls). On by default, with limits far above normal use; `false` turns them all off (benchmarks, fuzzing). See
   * docs/operations.md.
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-10.10 | RFC 6749 §10.10}
   * @see {@link https://www.rfc-editor.org/rfc/rfc6585#section-4 | RFC 6585 §4} (429)
   */
  rateLimits?: false | RateLimitOptions;
  /**
   * A pino logger: every event (`netauth.events`) is logged, and internal errors. Never secrets, tokens, codes,
   * auth_req_ids or phone numbers (a child logger with `redact` is the second line of defence).
   * @defaultValue none
   */
  logger?: NetAuthLogger;
  /**
   * Reports unexpected internal errors (never request data).
   * @defaultValue the logger's `error`, else one line on stderr
   */
  onError?: (error: unknown) => void;
  /**
   * Milliseconds clock, for tests.
   * @defaultValue `Date.now`
   */
  now?: () => number;
}
