import { StoreConsentRegistry } from '../consent/records.js';
import { ConsentConfirmation, checkConfirmation } from '../consent/confirmation.js';
import { StaticConsentPolicy, type ConsentPolicy } from '../consent/policy.js';
import { withNumberVerificationRules } from '../consent/number-verification.js';
import { StaticClientRegistry, type ClientRegistry } from '../registry/clients.js';
import { checkedRegistry, type RegistrationRefusal } from '../registry/client-checks.js';
import { StaticSubscriberDirectory, type SubscriberDirectory } from '../identity/subscribers.js';
import { MemoryStore } from '../stores/memory.js';
import type { Store } from '../stores/store.js';
import { NetworkIdentifier } from '../identity/network.js';
import type { BackchannelOptions, DpopHashClaim, NetAuthOptions } from './options.js';
import { resolveConsentPage, type ConsentPageConfig } from './http/consent-template.js';
import { resolveKeySet, type KeySet } from './tokens/keys.js';
import { NotBeforeMarkers } from './levers/not-before.js';
import { Revocations } from './tokens/revocations.js';
import { Consents } from './consents.js';
import { createPairwiseSubject, type PairwiseSubject } from '../identity/pairwise-subject.js';
import { EventHub } from '../ops/events.js';
import { NO_REQUEST_LIMITS, RateLimits } from '../ops/rate-limits.js';
import { createSourceLabel, type SourceLabel } from '../ops/event-source.js';
import { attachLogger, logInternalError, reportWarning, type StartupWarning } from '../ops/logging.js';
import { checkConsistency, checkOptions, resolveMode } from './options-check.js';
import { ClientKeys } from './client-auth/client-keys.js';
import { ClientJwts } from './client-auth/client-jwt.js';
import { dpopClaimsOption } from './tokens/dpop-binding.js';
import {
  ACCESS_TOKEN_FORMAT_DEFAULT,
  BODY_LIMIT_DEFAULT,
  CAMARA_BACKEND_ACCESS_TOKEN_LIFETIME,
  CLOCK_TOLERANCE_DEFAULT,
  ID_TOKENS_DEFAULT,
  LIFETIME_DEFAULTS,
} from '../defaults.js';

import type { AuthorizeCollaborators } from './endpoints/authorize.js';
import type { BackchannelAuthorizeCollaborators } from './endpoints/bc-authorize.js';
import type { ConsentPageCollaborators } from './endpoints/consent-page.js';
import type { ConsentsPageCollaborators } from './endpoints/consents-page.js';
import type { DiscoverySources } from './endpoints/discovery.js';
import type { IntrospectionCollaborators } from './endpoints/introspection.js';
import type { RevocationCollaborators } from './endpoints/revocation.js';
import type { TokenEndpointCollaborators } from './endpoints/token.js';
import type { Levers } from './levers/revoke.js';

/**
 * The options, resolved once, and the collaborators built from them: the composition root. No part takes it
 * whole; each names the few members it uses (the interfaces this one extends, themselves built from the interfaces
 * of the parts they call), and the router and the facade hand each part this context as that.
 */
export interface GatewayContext
  extends TokenEndpointCollaborators,
    AuthorizeCollaborators,
    BackchannelAuthorizeCollaborators,
    ConsentPageCollaborators,
    ConsentsPageCollaborators,
    IntrospectionCollaborators,
    RevocationCollaborators,
    DiscoverySources,
    Levers {
  issuer: string;
  /** `profile`: what the guard's defaults follow. */
  profile: NetAuthOptions['profile'];
  realm: string;
  clients: ClientRegistry;
  subscribers: SubscriberDirectory;
  policy: ConsentPolicy;
  /** The consent registry (built-in or the operator's Consent Master); withdrawals revoke tokens through it. */
  consent: Consents;
  store: Store;
  ownsStore: boolean;
  lifetimes: Required<NonNullable<NetAuthOptions['lifetimes']>>;
  backchannel: BackchannelOptions;
  /** Allow-listed phone numbers in sandbox mode; undefined outside it. */
  sandboxLines: ReadonlySet<string> | undefined;
  /** Network identification of the frontend flow; undefined when not configured (no one is identified). */
  network: NetworkIdentifier | undefined;
  consentPage: ConsentPageConfig;
  /**
   * One-time codes through the operator's channel: for consent rules with `confirmation: 'required'`, and for the
   * consents page whenever the hook is configured.
   */
  confirmation: ConsentConfirmation;
  /** Signing keys; undefined when nothing is signed (no ID tokens, opaque access tokens, no keys given). */
  keys: KeySet | undefined;
  /** ID tokens on: a granted `openid` comes with one. Off: `openid` is never granted (requests/authorization.ts). */
  idTokens: boolean;
  accessTokenFormat: 'opaque' | 'jwt';
  accessTokenAudience: string;
  pairwiseSubject: PairwiseSubject;
  revocations: Revocations;
  /** The operator's levers: a not-before marker per revoked subscriber and client, checked where tokens are used. */
  notBefore: NotBeforeMarkers;
  bodyLimit: string | number;
  onError: (error: unknown) => void;
  now: () => number;
  /** `netauth.events`: every state change, for operators. */
  events: EventHub;
  /** Rate limits and the client-authentication lock-out; undefined with `rateLimits: false`. */
  limits: RateLimits | undefined;
  /** A warning (or an error) found at run time, to the logger or stderr: each caller says it once. */
  warn: (warning: StartupWarning) => void;
  /** Reports, once per gateway, that the store could not be reached and requests are answered 503. */
  storeUnavailable: (error: Error) => void;
  /** The rate limits count on the store's connection (no `rateLimits.redis` of their own). */
  countersOnStore: boolean;
  /** Hash claims every DPoP proof must carry (`dpopClaimsRequired`), at the token endpoint and the guard. */
  dpopClaimsRequired: readonly DpopHashClaim[];
  /**
   * Hash claims required anywhere: gateway-wide, and by each guarded route (`netauth.guard()` adds its own).
   * Discovery announces them all as `camara_dpop_claims_required`.
   */
  announcedDpopClaims: Set<DpopHashClaim>;
  /** A request's network as events name it (`client.authentication_failed`'s `source`). */
  sourceLabel: SourceLabel;
  /** Verifies JWTs signed by a client's registered keys: client assertions and request objects. */
  clientJwts: ClientJwts;
}

function seconds(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  // Wire values (expires_in, interval) are whole, positive seconds: openid-client refuses anything else.
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`lifetimes.${name} must be a positive whole number of seconds`);
  return value;
}

function isList<T>(value: readonly T[] | object): value is readonly T[] {
  return Array.isArray(value);
}

function defaultOnError(error: unknown): void {
  // Only the error's name and message: request data (secrets, tokens, phone numbers) never reaches the log.
  const text = error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error';
  process.stderr.write(`express-netauth: internal error: ${text}\n`);
}

/** A store failure this long after the previous one is a new outage, reported again (NETAUTH_STORE_UNAVAILABLE). */
const STORE_OUTAGE_GAP_MS = 60_000;

/**
 * Resolves the options once. Every check that can run before a request runs here (options-check.ts and the
 * modules that own each option): a configuration that cannot work throws; warnings are reported at the end,
 * once everything is known to start.
 */
export function createContext(options: NetAuthOptions): GatewayContext {
  checkOptions(options);
  const issuerUrl = new URL(options.issuer);
  if (issuerUrl.search || issuerUrl.hash) throw new TypeError('issuer must not have a query or fragment');
  // Exactly as given: a trailing slash is refused by checkOptions, never removed.
  const issuer = options.issuer;
  const now = options.now ?? Date.now;
  const clockTolerance = options.clockTolerance ?? CLOCK_TOLERANCE_DEFAULT;
  const dpopClaimsRequired = dpopClaimsOption(options.dpopClaimsRequired, 'dpopClaimsRequired');
  const rules = isList(options.consentPolicy) ? new StaticConsentPolicy(options.consentPolicy) : options.consentPolicy;
  const l = options.lifetimes ?? {};
  const accessToken = seconds('accessToken', l.accessToken, LIFETIME_DEFAULTS.accessToken);
  const lifetimes = {
    code: seconds('code', l.code, LIFETIME_DEFAULTS.code),
    authReqId: seconds('authReqId', l.authReqId, LIFETIME_DEFAULTS.authReqId),
    pollInterval: seconds('pollInterval', l.pollInterval, LIFETIME_DEFAULTS.pollInterval),
    accessToken,
    // Never longer than any access token; the CAMARA profile's "short-lived" by default under it.
    backendAccessToken: Math.min(
      accessToken,
      seconds(
        'backendAccessToken',
        l.backendAccessToken,
        options.profile === 'camara' ? CAMARA_BACKEND_ACCESS_TOKEN_LIFETIME : accessToken,
      ),
    ),
    refreshToken: seconds('refreshToken', l.refreshToken, LIFETIME_DEFAULTS.refreshToken),
    expiredRetention: seconds('expiredRetention', l.expiredRetention, LIFETIME_DEFAULTS.expiredRetention),
    interaction: seconds('interaction', l.interaction, LIFETIME_DEFAULTS.interaction),
    redemptionRetry: seconds('redemptionRetry', l.redemptionRetry, LIFETIME_DEFAULTS.redemptionRetry),
  };
  const clientKeys = new ClientKeys(options.clientJwks ?? {}, now);
  let reportRefusal = (_refusal: RegistrationRefusal): void => {};
  const registry = isList(options.clients)
    ? new StaticClientRegistry(options.clients, { internalOrigins: options.clientJwks?.internalOrigins ?? [] })
    : options.clients;
  const clients = checkedRegistry(
    registry,
    clientKeys.destinationPolicy,
    (refusal) => reportRefusal(refusal),
    options.profile,
  );
  const subscribers = isList(options.subscribers)
    ? new StaticSubscriberDirectory(options.subscribers)
    : options.subscribers;
  const warnTrust = (option: string, message: string, code: string) =>
    reportWarning(options.logger, { option, message, code });
  const network = options.network ? new NetworkIdentifier(options.network, warnTrust) : undefined;
  const accessTokenFormat = options.accessTokenFormat ?? ACCESS_TOKEN_FORMAT_DEFAULT;
  if (accessTokenFormat !== 'opaque' && accessTokenFormat !== 'jwt')
    throw new TypeError("accessTokenFormat must be 'opaque' or 'jwt'");
  const idTokens = options.idTokens ?? ID_TOKENS_DEFAULT;
  const keys = resolveKeySet(options.signingKeys, idTokens || accessTokenFormat === 'jwt');
  const pairwiseSubject = createPairwiseSubject(options.pairwiseSalt);
  const warnings = checkConsistency({
    options,
    mode: resolveMode(options.mode),
    clients,
    policy: rules,
    lifetimes,
    generatedKey: keys?.generated ?? false,
  });
  // Checked as written; applied with Number Verification's rules (consent/number-verification.ts).
  const policy = withNumberVerificationRules(rules, options.profile === 'camara');
  const consentPage = resolveConsentPage(options.consentPage, issuerUrl, policy.rules());
  const confirmation = checkConfirmation(
    policy.rules(),
    options.sendConsentConfirmation,
    options.consentConfirmation,
    lifetimes.interaction,
    options.profile,
  );

  // Everything checked: now what holds state (the default store's timer, the counters).
  const store = options.store ?? new MemoryStore({ now });
  const logger = options.logger;
  const reportError = options.onError ?? (logger ? undefined : defaultOnError);
  const onError = (error: unknown): void => {
    // Reporting never throws into a request: a failing reporter is as good as none.
    try {
      reportError?.(error);
      if (logger) logInternalError(logger, error);
    } catch {
      /* nothing left to tell */
    }
  };
  const events = new EventHub(onError);
  if (logger) attachLogger(logger, events);
  reportRefusal = (refusal) => events.emit('client.registration_refused', refusal);
  const confirmationCaps = { sent: confirmation.codesPerSubscriber, wrong: confirmation.wrongCodesPerSubscriber };
  let limits: RateLimits | undefined;
  try {
    limits =
      options.rateLimits === false
        ? undefined
        : new RateLimits(options.rateLimits ?? {}, store, onError, events, confirmationCaps, now);
  } catch (error) {
    if (options.store === undefined) void store.close?.();
    throw error;
  }
  // The caps of confirmation codes protect the subscriber's line and consent, not the gateway: they hold without
  // rate limits.
  const codeCounters =
    limits ??
    (options.sendConsentConfirmation !== undefined &&
    (confirmationCaps.sent !== undefined || confirmationCaps.wrong !== undefined)
      ? new RateLimits(NO_REQUEST_LIMITS, store, onError, events, confirmationCaps, now)
      : undefined);
  const revocations = new Revocations(store, now, lifetimes.accessToken);
  const consentRegistry = options.consentRegistry ?? new StoreConsentRegistry(store, policy, now);
  const consent = new Consents(consentRegistry, revocations, events, now);
  for (const warning of warnings) reportWarning(logger, warning);
  const warn = (warning: StartupWarning): void => reportWarning(logger, warning);
  // Once per outage: an outage is over once a minute passed without a request finding the store unavailable.
  let storeFailedAt: number | undefined;
  const storeUnavailable = (error: Error): void => {
    const at = now();
    const ongoing = storeFailedAt !== undefined && at - storeFailedAt < STORE_OUTAGE_GAP_MS;
    storeFailedAt = at;
    if (ongoing) return;
    warn({
      option: 'store',
      code: 'NETAUTH_STORE_UNAVAILABLE',
      level: 'error',
      repeats: true,
      message:
        `the store (${(store as Store).describe?.() ?? store.constructor.name}) cannot be reached: ${error.message}. ` +
        'Requests that need it are answered 503 until it answers (said once per outage). At start, call ' +
        '`await store.open()` before the server listens, so a store that cannot connect stops the start.',
    });
  };
  return {
    issuer,
    profile: options.profile,
    realm: options.realm ?? issuer,
    clients,
    subscribers,
    policy,
    consent,
    store,
    ownsStore: options.store === undefined,
    lifetimes,
    backchannel: options.backchannel ?? {},
    sandboxLines: options.sandbox
      ? new Set(options.sandbox.allowList.map((line) => (line.startsWith('tel:') ? line.slice(4) : line)))
      : undefined,
    network,
    consentPage,
    confirmation: new ConsentConfirmation(
      store,
      options.sendConsentConfirmation,
      confirmation,
      now,
      codeCounters && ((subscriberId, page) => codeCounters.confirmationCode(subscriberId, page)),
      codeCounters && ((subscriberId) => codeCounters.confirmationAttempt(subscriberId)),
    ),
    keys,
    idTokens,
    accessTokenFormat,
    accessTokenAudience: options.accessTokenAudience ?? issuer,
    pairwiseSubject,
    revocations,
    // Kept while anything granted before a revocation can still be presented (a refresh token, the longest), plus
    // a minute for a token issued while the revocation ran.
    notBefore: new NotBeforeMarkers(store, now, Math.max(...Object.values(lifetimes)) + 60),
    bodyLimit: options.bodyLimit ?? BODY_LIMIT_DEFAULT,
    onError,
    now,
    events,
    limits,
    warn,
    storeUnavailable,
    countersOnStore: limits !== undefined && options.rateLimits !== false && options.rateLimits?.redis === undefined,
    dpopClaimsRequired,
    announcedDpopClaims: new Set(dpopClaimsRequired),
    sourceLabel: createSourceLabel(options.pairwiseSalt),
    clientJwts: new ClientJwts(store, clientKeys, now, {
      clockTolerance,
      // The profile SHALL reject an iat after receipt: no tolerance for it under the preset.
      iat: options.profile === 'camara' ? 0 : clockTolerance,
    }),
  };
}
