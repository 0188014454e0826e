import type { OAuthErrorCode } from '../errors.js';
import type { GrantType } from '../registry/clients.js';
import type { SubscriberIdentification } from '../identity/identification.js';

/**
 * The gateway's events: one for every state change, typed, for operators (metrics, logs, alerts).
 *
 * Payloads carry what an operator needs and nothing that grants or identifies more than that: client ids,
 * the operator's opaque subscriber id, purpose, scopes, grant type, a reason. Never a secret, token, code,
 * auth_req_id, phone number or login_hint; never an IP address (a failure's `source` is a keyed hash of a network).
 */

/** The router's endpoints, as they appear in events and metrics. */
export type Endpoint =
  | 'authorize'
  | 'consent'
  | 'consents'
  | 'bc-authorize'
  | 'token'
  | 'introspect'
  | 'revoke'
  | 'jwks'
  | 'discovery';

/** Who asks for what: the common ground of most payloads. */
export interface GrantSubject {
  clientId: string;
  /** The operator's opaque subscriber id (never the phone number). */
  subscriberId: string;
  /** DPV purpose, e.g. `FraudPreventionAndDetection`. */
  purpose: string;
  /** API scopes, e.g. `["sim-swap"]`. */
  scopes: string[];
}

/** How the subscriber was identified: `network`, `operatortoken`, or a hint the client supplied (`tel`, `ipport`). */
export interface IdentifiedSubject extends GrantSubject {
  identifiedBy: SubscriberIdentification;
}

/** GET /authorize accepted a request and identified the subscriber (frontend flow). */
export interface AuthorizationRequestedEvent extends IdentifiedSubject {
  /** True when the consent page is shown; false when a code is issued at once. */
  consentPage: boolean;
}

/** Consent recorded or withdrawn, on the consent page or through `netauth.consent`. */
export interface ConsentEvent extends GrantSubject {
  via: 'page' | 'api';
}

/** Why a confirmation did not go through. */
export type ConfirmationFailure = 'send_error' | 'send_timeout' | 'wrong_code' | 'attempts_exhausted' | 'code_expired';

/**
 * Confirmation through the operator's channel did not go through (docs/consent.md): `send_error` or
 * `send_timeout` (the `sendConsentConfirmation` hook; the page offers to try again), `wrong_code` (attempts are
 * left), `attempts_exhausted` or `code_expired` (the interaction ends with access_denied). `for` says which page,
 * as the hook's context does: `consent` (an application's request: who asked for what) or `consents` (the
 * subscriber's consents page: no application is involved).
 */
export type ConsentConfirmationFailedEvent =
  | (GrantSubject & { for: 'consent'; reason: ConfirmationFailure })
  | { for: 'consents'; subscriberId: string; reason: ConfirmationFailure };

export interface CodeIssuedEvent extends IdentifiedSubject {
  /** Whether the code is bound to a PKCE challenge. */
  pkce: boolean;
}

export type CodeConsumedEvent = GrantSubject;

/** A code presented again: the tokens issued from it are revoked. */
export type CodeReplayedEvent = GrantSubject;

/** bc-authorize answered 200: the request is pending. */
export type CibaRequestedEvent = IdentifiedSubject;

/** A CIBA poll answered slow_down. */
export interface CibaSlowDownEvent {
  clientId: string;
  /** Absent when the client's rate limit answered before the request was read. */
  subscriberId?: string;
  /** `interval`: polled sooner than the interval; `rate_limit`: the client's or subscriber's rate limit. */
  reason: 'interval' | 'rate_limit';
}

/** A CIBA poll handed out the token. */
export type CibaApprovedEvent = GrantSubject;

/** A CIBA poll answered access_denied (emitted with each such answer). */
export interface CibaDeniedEvent extends GrantSubject {
  /** `decision`: the backchannel.authorize hook or `netauth.backchannel.deny`; `consent`: the subscriber refused. */
  reason: 'decision' | 'consent';
}

/** A CIBA poll answered expired_token (emitted with each such answer). */
export type CibaExpiredEvent = GrantSubject;

export interface TokenIssuedEvent extends Omit<GrantSubject, 'subscriberId'> {
  /** Absent for a two-legged token (client credentials): it has no subscriber. */
  subscriberId?: string;
  /** How the subscriber was identified; absent for a two-legged token. */
  identifiedBy?: SubscriberIdentification;
  grantType: GrantType;
  format: 'opaque' | 'jwt';
  idToken: boolean;
  /** A refresh token was issued with it (code, CIBA or refresh grant, `offline_access`). */
  refreshToken: boolean;
  /** The access token is good for one API call (the scope's policy rule). */
  singleUse: boolean;
}

export interface TokenRevokedEvent {
  clientId: string;
  /** Absent for a two-legged token (client credentials). */
  subscriberId?: string;
  /**
   * `revocation_request`: RFC 7009 at /revoke (one access token, or every token of a refresh token's grant);
   * `code_replay`: every token of a replayed code; `refresh_token_reuse`: every token of a grant whose
   * rotated-out refresh token was presented again (RFC 9700 §4.14.2); `consent_withdrawn`: every token issued
   * under a consent revoked or superseded by a refusal.
   */
  reason: 'revocation_request' | 'code_replay' | 'refresh_token_reuse' | 'consent_withdrawn';
  purpose: string;
}

/**
 * Why an operator stops a subscriber's tokens (`netauth.subscribers.revoke`): `number_recycled` (the number went to
 * a new customer, or was ported out), `erasure_request` (GDPR Art. 17), `contract_ended`, `sim_swap` (a swap
 * flagged as suspect), `fraud`.
 */
export type SubscriberRevocationReason =
  | 'number_recycled'
  | 'erasure_request'
  | 'contract_ended'
  | 'sim_swap'
  | 'fraud';

/** Why an operator stops a client's tokens (`netauth.clients.revoke`): `compromised`, `offboarded`, `contract_ended`, `fraud`. */
export type ClientRevocationReason = 'compromised' | 'offboarded' | 'contract_ended' | 'fraud';

/**
 * `netauth.subscribers.revoke`: from `notBefore` on, every token, refresh token, code, auth_req_id and consent
 * interaction of the subscriber that began before is refused, on every instance. Tokens are not counted: they are
 * refused where they are used, so a revocation costs one write whatever the subscriber holds.
 */
export interface SubscriberRevokedEvent {
  subscriberId: string;
  reason: SubscriberRevocationReason;
  /** What happened to the subscriber's consent records. */
  consents: 'keep' | 'withdraw';
  /** Consent records removed (granted and refused); 0 with `consents: 'keep'`. */
  consentsWithdrawn: number;
}

/** `netauth.clients.revoke`: every token and pending request of the client that began before is refused. */
export interface ClientRevokedEvent {
  clientId: string;
  reason: ClientRevocationReason;
}

export interface ClientAuthenticationFailedEvent {
  endpoint: Endpoint;
  /** Only a registered client's id: an id nobody registered is never repeated (it may be anything). */
  clientId?: string;
  /**
   * `missing`: no credentials; `malformed`: unreadable Basic header, or a `client_assertion` of another type or
   * naming no client; `invalid_credentials`: unknown client, wrong secret, an assertion that fails a check, or a
   * method the client is not registered for (only these count towards the lock-out);
   * `client_id_mismatch`: a body client_id naming another client.
   */
  reason: 'missing' | 'malformed' | 'invalid_credentials' | 'client_id_mismatch';
  /**
   * The network the request came from, never its address: `ipv4:` or `ipv6:` and a keyed hash (HMAC-SHA-256 keyed
   * from `pairwiseSalt`) of its /24 or /48, equal for one network on every instance; `unknown` without an address.
   * Count the distinct sources of one client's failures to see a guesser spread over many addresses.
   */
  source: string;
}

/**
 * A custom `ClientRegistry` found a registration that fails the checks a static one passes at start-up (or the
 * `jwksUri` destination policy): the client is treated as unknown. Reported once per record content.
 */
export interface ClientRegistrationRefusedEvent {
  clientId: string;
  /** The registration field at fault (`jwksUri`, `redirectUris`, ...). */
  field: string;
  /** The check's words: they name the field and may quote a URI, never a secret or key material. */
  reason: string;
}

export interface RateLimitedEvent {
  /** The router's endpoint, or `guard`: a service API's guard (the DPoP proofs per key). */
  endpoint: Endpoint | 'guard';
  /**
   * A request-rate limit: `client` (one client), `client_subscriber` (one client for one subscriber),
   * `subscriber` (one subscriber, every client together), `address` (GET /authorize per device address),
   * `dpop_key` (DPoP proofs of one key, `rateLimits.dpopProofs.perKey`), `dpop_client` (of every key of one client,
   * `rateLimits.dpopProofs.perClient`); `client_authentication`: the brute-force
   * lock-out after failed client authentications (per client id and address, or per address for unknown ids);
   * `confirmation_codes`: the codes sent to one subscriber (`consentConfirmation.codesPerSubscriber`);
   * `wrong_codes`: the wrong codes typed for one subscriber (`consentConfirmation.wrongCodesPerSubscriber`).
   */
  limit:
    | 'client'
    | 'client_subscriber'
    | 'subscriber'
    | 'address'
    | 'dpop_key'
    | 'dpop_client'
    | 'client_authentication'
    | 'confirmation_codes'
    | 'wrong_codes';
  /** Present when the limit is the client's (or a registered client's lock-out); for `dpop_key` and `dpop_client`, the client that sent the proof. */
  clientId?: string;
  /** Present when the limit concerns a subscriber. */
  subscriberId?: string;
  /** Seconds until the limit lets requests through again (the Retry-After value). */
  retryAfter: number;
}

/**
 * The shared (Redis) rate-limit counters failed and this instance counts for itself, with the same rules, until
 * they answer again: the request-rate limits then hold per instance, and the lock-out refuses (fails closed).
 * Emitted at most once a minute per process while failures come (whatever their cause), and when Redis counts again.
 */
export interface RateFallbackEvent {
  /** `failing`: counted in memory since the previous event, Redis still failing; `recovered`: Redis answers again. */
  state: 'failing' | 'recovered';
  /**
   * `unavailable`: Redis down, restarting or failing over; `timeout`: no answer within `rateLimits.timeout`;
   * `error`: Redis refused the counters' scripts (an ACL without `evalsha`, say), which `onError` is told too.
   * While Redis fails, lock-out reservations are refused (503, Retry-After: 1) rather than counted per process.
   */
  cause: 'unavailable' | 'timeout' | 'error';
  /** Counter operations this instance answered alone since the previous event. */
  operations: number;
}

/**
 * `unsettled`: a redemption (code, approved auth_req_id, refresh token) whose store step failed after it was sent (no reply within
 * the store's timeout, or the connection dropped): the client got 503, and the code or auth_req_id may be consumed
 * with its tokens stored. `redelivered`: a retry of the same client, within `lifetimes.redemptionRetry`, got the
 * tokens such a step stored (or a concurrent redemption's). Unsettled minus redelivered bounds the answers lost.
 */
export interface RedemptionEvent {
  clientId: string;
  grantType: GrantType;
}

/** Every answer of the router (not of the guard), for latency and outcome metrics. */
export interface RequestCompletedEvent {
  endpoint: Endpoint;
  method: string;
  status: number;
  /** `ok`, or the OAuth error code the response carried (JSON body, redirect or error page). */
  outcome: 'ok' | OAuthErrorCode;
  /** Token endpoint: a supported grant_type, else undefined. */
  grantType?: GrantType;
  /** Wall time from the request reaching the router to the response's last byte handed to the OS. */
  durationMs: number;
}

/** Event name → payload. */
export interface NetAuthEvents {
  'authorization.requested': AuthorizationRequestedEvent;
  'consent.granted': ConsentEvent;
  'consent.denied': ConsentEvent;
  'consent.revoked': ConsentEvent;
  'consent.confirmation_failed': ConsentConfirmationFailedEvent;
  'code.issued': CodeIssuedEvent;
  'code.consumed': CodeConsumedEvent;
  'code.replayed': CodeReplayedEvent;
  'ciba.requested': CibaRequestedEvent;
  'ciba.slow_down': CibaSlowDownEvent;
  'ciba.approved': CibaApprovedEvent;
  'ciba.denied': CibaDeniedEvent;
  'ciba.expired': CibaExpiredEvent;
  'token.issued': TokenIssuedEvent;
  'token.revoked': TokenRevokedEvent;
  'subscriber.revoked': SubscriberRevokedEvent;
  'client.revoked': ClientRevokedEvent;
  'client.authentication_failed': ClientAuthenticationFailedEvent;
  'client.registration_refused': ClientRegistrationRefusedEvent;
  'rate.limited': RateLimitedEvent;
  'rate.fallback': RateFallbackEvent;
  'redemption.unsettled': RedemptionEvent;
  'redemption.redelivered': RedemptionEvent;
  'request.completed': RequestCompletedEvent;
}

export type NetAuthEventName = keyof NetAuthEvents;

export type NetAuthEventListener<K extends NetAuthEventName> = (payload: Readonly<NetAuthEvents[K]>, name: K) => void;

/** Every event name, in a stable order (the logger and the metrics subscribe to each). */
export const EVENT_NAMES: readonly NetAuthEventName[] = [
  'authorization.requested',
  'consent.granted',
  'consent.denied',
  'consent.revoked',
  'consent.confirmation_failed',
  'code.issued',
  'code.consumed',
  'code.replayed',
  'ciba.requested',
  'ciba.slow_down',
  'ciba.approved',
  'ciba.denied',
  'ciba.expired',
  'token.issued',
  'token.revoked',
  'subscriber.revoked',
  'client.revoked',
  'client.authentication_failed',
  'client.registration_refused',
  'rate.limited',
  'rate.fallback',
  'redemption.unsettled',
  'redemption.redelivered',
  'request.completed',
];

/** What `netauth.events` offers: subscribe and unsubscribe. */
export interface NetAuthEventEmitter {
  /**
   * Calls `listener` synchronously with every `name` event. Keep it fast (hand slow work to a queue): it runs
   * inside the request. A listener that throws (or returns a rejected promise) is reported to `onError` and
   * never fails the request.
   */
  on<K extends NetAuthEventName>(name: K, listener: NetAuthEventListener<K>): this;
  off<K extends NetAuthEventName>(name: K, listener: NetAuthEventListener<K>): this;
}

type AnyListener = (payload: unknown, name: NetAuthEventName) => unknown;

/**
 * A small typed emitter. Emitting an event nobody listens to costs one property read, so endpoints emit
 * unconditionally; `has()` lets a caller skip work (building a payload, timing a request) when nobody listens.
 */
export class EventHub implements NetAuthEventEmitter {
  // A plain object of arrays: the lookup in emit() is one property read. Arrays are replaced, never mutated,
  // so a listener that unsubscribes during an emit does not disturb the loop.
  private readonly listeners: { [K in NetAuthEventName]?: AnyListener[] } = Object.create(null) as {
    [K in NetAuthEventName]?: AnyListener[];
  };

  constructor(private readonly onListenerError: (error: unknown) => void) {}

  on<K extends NetAuthEventName>(name: K, listener: NetAuthEventListener<K>): this {
    if (!EVENT_NAMES.includes(name)) throw new TypeError(`unknown event "${String(name)}"`);
    if (typeof listener !== 'function') throw new TypeError('listener must be a function');
    this.listeners[name] = [...(this.listeners[name] ?? []), listener as AnyListener];
    return this;
  }

  off<K extends NetAuthEventName>(name: K, listener: NetAuthEventListener<K>): this {
    const current = this.listeners[name];
    if (!current) return this;
    const index = current.lastIndexOf(listener as AnyListener);
    if (index < 0) return this;
    const next = [...current.slice(0, index), ...current.slice(index + 1)];
    if (next.length > 0) this.listeners[name] = next;
    else delete this.listeners[name];
    return this;
  }

  /** Whether anyone listens to `name`. */
  has(name: NetAuthEventName): boolean {
    return this.listeners[name] !== undefined;
  }

  emit<K extends NetAuthEventName>(name: K, payload: NetAuthEvents[K]): void {
    const listeners = this.listeners[name];
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        const result = listener(payload, name);
        // An async listener (its `void` type allows one): its rejection is reported like a throw.
        if (result !== undefined) Promise.resolve(result).catch(this.onListenerError);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }
}
