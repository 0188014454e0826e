/**
 * Every default of the options, in one place: the options' TSDoc (the API reference), the rate limits
 * (docs/operations.md), the stores and the guard read theirs from here. Durations are in the unit of the option
 * they stand for: seconds for lifetimes and rules, milliseconds for timeouts and intervals.
 */

/** `lifetimes` (seconds). */
export const LIFETIME_DEFAULTS = {
  code: 60,
  authReqId: 120,
  pollInterval: 2,
  accessToken: 3600,
  /** 14 days, counted from each rotation. */
  refreshToken: 14 * 24 * 3600,
  expiredRetention: 600,
  interaction: 600,
  redemptionRetry: 30,
} as const;

/** `lifetimes.backendAccessToken` under `profile: 'camara'` (seconds): the profile's "short-lived". */
export const CAMARA_BACKEND_ACCESS_TOKEN_LIFETIME = 300;

/** `bodyLimit`: the largest form body, after content decoding (the `bytes` package's notation, as body-parser's). */
export const BODY_LIMIT_DEFAULT = '16kb';

/** `idTokens`: a granted `openid` always comes with an ID token (OIDC Core §3.1.3.3). */
export const ID_TOKENS_DEFAULT = true;

/**
 * `clockTolerance` (seconds): how far ahead a client's clock may run on client assertions, request objects and
 * JWT-bearer assertions (`iat`, `nbf`). Under `profile: 'camara'`, `iat` gets none (the profile's SHALL).
 */
export const CLOCK_TOLERANCE_DEFAULT = 5;

/** `accessTokenFormat`. */
export const ACCESS_TOKEN_FORMAT_DEFAULT = 'opaque';

/** scrypt client-secret checks, process-wide: derivations at once, and checks waiting (then 503). */
export const SCRYPT_DEFAULTS = { concurrency: 2, queue: 32 } as const;

/** `clientJwks`: `fetchTimeout` (ms), `maxBytes`, `cacheMaxAge` (seconds). */
export const CLIENT_JWKS_DEFAULTS = { fetchTimeout: 5000, maxBytes: 65536, cacheMaxAge: 600 } as const;

/**
 * `rateLimits`: every rule (points or failures per duration in seconds). Exported from the package: a deployment
 * can scale them rather than restate them.
 */
export const RATE_LIMIT_DEFAULTS = {
  authorize: { perAddress: { points: 300, duration: 60 } },
  bcAuthorize: {
    perClient: { points: 3000, duration: 60 },
    perClientAndSubscriber: { points: 60, duration: 600 },
    perSubscriber: { points: 600, duration: 600 },
  },
  token: {
    perClient: { points: 6000, duration: 60 },
    perClientAndSubscriber: { points: 300, duration: 60 },
    perSubscriber: { points: 3000, duration: 60 },
  },
  /** At most twice `points` live tokens per client, whatever the token lifetime up to `duration`. */
  clientCredentials: { perClient: { points: 100, duration: 3600 } },
  /**
   * DPoP proofs whose `jti` is recorded, per key (`jkt`): a window longer than a replay entry lives (605 s) keeps at
   * most twice `points` entries of one key live. ~66 proofs a second per key, sustained.
   */
  dpopProofs: {
    perKey: { points: 60000, duration: 900 },
    /**
     * Every key of one client together: a client may hold many bound tokens (200 live client-credentials tokens by
     * default), each with a key of its own. At most twice `points` of its entries live; ~333 proofs a second.
     */
    perClient: { points: 300000, duration: 900 },
  },
  clientAuthentication: {
    perClientAndAddress: { failures: 30, duration: 900 },
    perAddress: { failures: 30, duration: 900 },
  },
} as const;

/** `rateLimits.timeout` (ms a Redis counter may take), and what the counters' key prefix is made of. */
export const RATE_LIMIT_COUNTER_DEFAULTS = {
  timeout: 500,
  /** Appended to the store's prefix (or to `netauth:` when the store has none) unless `keyPrefix` is given. */
  keyPrefixSuffix: 'rl:',
} as const;

/**
 * `new RedisStore(options)`: `timeout` and `replicaWait` in ms; `waitForReplicas` at most the replicas a master has
 * online (0 on a master without replicas).
 */
export const REDIS_STORE_DEFAULTS = {
  url: 'redis://localhost:6379',
  prefix: 'netauth:',
  timeout: 2000,
  replicaWait: 100,
  waitForReplicas: 1,
  allowEviction: false,
} as const;

/** `new MemoryStore(options)`: `sweepInterval` in ms (0: no timer, expired records go as they are read). */
export const MEMORY_STORE_DEFAULTS = { sweepInterval: 30_000 } as const;

/** `netauth.guard(options)`. */
export const GUARD_DEFAULTS = { revocation: 'local', errorFormat: 'oauth', subscriber: 'required' } as const;

/** `netauth.guard({ device })`: where the body names the device, and whether the API may confirm a match. */
export const GUARD_DEVICE_DEFAULTS = { identifier: 'device', confirm: false } as const;

/** `netauth.metricsRouter(options)`: `buckets` of the latency histogram in seconds (1 ms to 2.5 s). */
export const METRICS_DEFAULTS = {
  prefix: 'netauth_',
  clientIdLabel: true,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
} as const;

/**
 * A client's `tokenEndpointAuthMethod` when its registration names none (RFC 7591 §2), and what discovery announces
 * when the registry declares no `authMethods`.
 */
export const CLIENT_AUTH_METHOD_DEFAULT = 'client_secret_basic';

/**
 * What discovery announces when nothing more specific is known: the grant types when the registry declares none
 * (the static registry's clients may use these two), the ID token algorithm when no keys are published (OIDC
 * Discovery §3: RS256 must be listed).
 */
export const DISCOVERY_DEFAULTS = {
  grantTypes: ['authorization_code', 'urn:openid:params:grant-type:ciba'],
  idTokenSigningAlgorithms: ['RS256'],
} as const;

/** A consent policy rule's `consentLifetime` (seconds): a year. Withdrawn consents are kept as long. */
export const CONSENT_LIFETIME_DEFAULT = 365 * 24 * 3600;

/** `consentPage`: the page's cookie, notice version, language, and look when the operator gives none. */
export const CONSENT_PAGE_DEFAULTS = {
  cookieName: 'netauth.sid',
  noticeVersion: '1',
  language: 'en',
  operatorName: 'Your mobile operator',
  primaryColor: '#0b57d0',
  primaryTextColor: '#ffffff',
  backgroundColor: '#ffffff',
  textColor: '#1f1f1f',
} as const;

/**
 * `createNetAuthClient(options)`: `refreshBeforeExpiry` (seconds), `assertionAudience`, and the CIBA poll
 * `interval` (seconds) when the gateway's answer gives none (CIBA Core §7.3).
 */
export const CLIENT_DEFAULTS = { refreshBeforeExpiry: 30, assertionAudience: 'issuer', pollInterval: 5 } as const;

/**
 * `consentConfirmation`: the one-time code a consent rule with `confirmation: 'required'`, and the consents page,
 * send through `sendConsentConfirmation`. `codeLifetime` in seconds, `sendTimeout` in ms, `maxAttempts` codes
 * typed per interaction before it ends, `codesPerSubscriber` codes sent to one subscriber per `duration` seconds
 * (per page), `wrongCodesPerSubscriber` wrong codes typed for one subscriber per `duration` seconds: 10 a day
 * keeps a script that guesses for a year under 0.4 % (3,650 of a million codes).
 */
export const CONSENT_CONFIRMATION_DEFAULTS = {
  codeLifetime: 300,
  maxAttempts: 3,
  sendTimeout: 10_000,
  codesPerSubscriber: { points: 5, duration: 900 },
  wrongCodesPerSubscriber: { points: 10, duration: 86_400 },
} as const;
