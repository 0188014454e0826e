/**
 * The gateway: `createNetAuth(options)` returns the authorization service's router, its guard for the service
 * APIs, the consent API and the stores.
 *
 * @packageDocumentation
 * @module express-netauth
 */
export { createNetAuth } from './netauth.js';
export type {
  NetAuth,
  ConsentApi,
  ConsentDecisionInput,
  ConsentInput,
  ConsentRevokeInput,
  SubscriberInput,
  BackchannelApi,
  SubscribersApi,
  ClientsApi,
} from './netauth.js';
export type {
  SubscriberRevocation,
  SubscriberRevocationResult,
  ClientRevocation,
  ClientRevocationResult,
  ConsentDisposition,
} from './gateway/levers/revoke.js';
export type {
  NetAuthOptions,
  NetAuthProfile,
  NetAuthMode,
  Lifetimes,
  BackchannelOptions,
  BackchannelRequest,
  BackchannelDecision,
  SandboxOptions,
  NetworkOptions,
  ConsentPageOptions,
  LabelWording,
  PageLabels,
  PageLanguageOptions,
  ConsentPageTexts,
  SubscriberConsentsTexts,
} from './gateway/options.js';
export type { ConfirmationSetting } from './consent/policy.js';
export type {
  ConfirmationContextBase,
  ConsentConfirmationContext,
  ConsentRequestConfirmation,
  ConsentsPageConfirmation,
  ConsentConfirmationOptions,
  SendConsentConfirmation,
} from './consent/confirmation.js';
export type {
  GuardOptions,
  NetAuthGrant,
  NetAuthTwoLeggedGrant,
  NetAuthAnyGrant,
  NetAuthLocals,
  NetAuthOptionalSubscriberGuard,
} from './guard/guard.js';
export type { GuardErrorFormat, CamaraErrorInfo } from './guard/responses.js';
export type { DpopHashClaim } from './gateway/options.js';
export type { DeviceOptions, DeviceIdentifier, NetAuthDevice } from './guard/device.js';
export { EVENT_NAMES } from './ops/events.js';
export type {
  NetAuthEvents,
  NetAuthEventName,
  NetAuthEventListener,
  NetAuthEventEmitter,
  Endpoint,
  GrantSubject,
  AuthorizationRequestedEvent,
  ConsentEvent,
  ConfirmationFailure,
  ConsentConfirmationFailedEvent,
  CodeIssuedEvent,
  CodeConsumedEvent,
  CodeReplayedEvent,
  RedemptionEvent,
  IdentifiedSubject,
  CibaRequestedEvent,
  CibaSlowDownEvent,
  CibaApprovedEvent,
  CibaDeniedEvent,
  CibaExpiredEvent,
  TokenIssuedEvent,
  TokenRevokedEvent,
  SubscriberRevokedEvent,
  ClientRevokedEvent,
  SubscriberRevocationReason,
  ClientRevocationReason,
  ClientAuthenticationFailedEvent,
  RateLimitedEvent,
  RateFallbackEvent,
  RequestCompletedEvent,
  ClientRegistrationRefusedEvent,
} from './ops/events.js';
export { RATE_LIMIT_DEFAULTS } from './defaults.js';
export { RateLimitFallbackError } from './ops/counters.js';
export type {
  RateLimitOptions,
  RateLimitRule,
  FailureLimitRule,
  RateLimitRedisClient,
  SubscriberLimitRules,
} from './ops/rate-limits.js';
export type { MetricsOptions, MetricsRegistry } from './ops/metrics.js';
export { REDACT_PATHS } from './ops/logging.js';
export type { NetAuthLogger, LogMethod } from './ops/logging.js';
export type { AuthorizationServerMetadata } from './gateway/endpoints/discovery.js';
export type { TokenResponse } from './gateway/tokens/access-tokens.js';
export type { AccessTokenClaims } from './gateway/tokens/jwt-access-tokens.js';
export type { IntrospectionResponse } from './gateway/endpoints/introspection.js';
export type { JWK } from 'jose';
export { OAuthError, isOAuthError } from './errors.js';
export type { OAuthErrorCode, OAuthErrorOptions } from './errors.js';
export {
  StaticClientRegistry,
  hashClientSecret,
  checkRedirectUri,
  CLIENT_SIGNING_ALGORITHMS,
  SUPPORTED_GRANT_TYPES,
} from './registry/clients.js';
export type {
  ClientRegistry,
  RegisteredClient,
  GrantType,
  ClientAuthMethod,
  ClientSigningAlgorithm,
} from './registry/clients.js';
export type { ClientJwksOptions } from './gateway/options.js';
export { StaticSubscriberDirectory } from './identity/subscribers.js';
export type { Subscriber, SubscriberDirectory, StaticSubscriber } from './identity/subscribers.js';
export type { NetworkAddress, LoginHint } from './identity/login-hint.js';
export type { SubscriberIdentification } from './identity/identification.js';
export { parseLoginHint } from './identity/login-hint.js';
export { parseScope } from './identity/scope.js';
export type { RequestedScope } from './identity/scope.js';
export { StaticConsentPolicy } from './consent/policy.js';
export type { ConsentPolicy, ConsentRule, LegalBasis } from './consent/policy.js';
export { NUMBER_VERIFICATION_SCOPES } from './consent/number-verification.js';
export { StoreConsentRegistry } from './consent/records.js';
export type {
  ConsentCaptureMethod,
  ConsentConfirmationChannel,
  ConsentEvidence,
  ConsentNotice,
  ConsentRecord,
  ConsentRegistry,
  ConsentSubject,
  ConsentWithdrawal,
} from './consent/registry.js';
export type { ConsentExport, ExportedConsent, OutOfBandEvidence } from './consent/evidence.js';
export { MemoryStore } from './stores/memory.js';
export type { MemoryStoreOptions } from './stores/memory.js';
export { StoreUnavailableError, placementTag } from './stores/store.js';
export type {
  Store,
  RecordKind,
  PutOptions,
  RecordWrite,
  StoredRecord,
  JsonObject,
  JsonValue,
  SharedCounters,
  CounterScript,
} from './stores/store.js';
export { RedisStore, StoreDataLossError } from './stores/redis.js';
export type {
  RedisStoreOptions,
  RedisStoreClient,
  RedisCommandClient,
  RedisClusterCommandClient,
  RedisSentinelCommandClient,
  ReplicaShortfall,
  TopologyFault,
  TopologyFaultKind,
} from './stores/redis.js';
