import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { OAuthError } from '../errors.js';
import type { Store } from '../stores/store.js';
import { RedisStore } from '../stores/redis.js';
import type { EventHub, RateLimitedEvent } from './events.js';
import { FailureBudget, seconds, type Reservation } from './lockout.js';

/** At most `points` requests per `duration` seconds. */
export interface RateLimitRule {
  points: number;
  duration: number;
}

/** At most `failures` failed client authentications per `duration` seconds; then locked until the window passes. */
export interface FailureLimitRule {
  failures: number;
  duration: number;
}

/**
 * What rate-limiter-flexible needs of a node-redis (v4/v5) client: `createClient()`'s result fits. Give a
 * client with `disableOfflineQueue: true`, so a command fails at once (and the per-process limits take over)
 * while Redis is unreachable.
 */
export interface RateLimitRedisClient {
  readonly isReady: boolean;
  eval(...args: never[]): unknown;
  multi(): unknown;
  del(...args: never[]): unknown;
}

/** The limits of an endpoint that concerns a subscriber. */
export interface SubscriberLimitRules {
  /** Requests of one authenticated client. */
  perClient?: RateLimitRule | false;
  /** Requests of one client for one subscriber: a client's traffic never uses up another client's allowance. */
  perClientAndSubscriber?: RateLimitRule | false;
  /** Requests for one subscriber from every client together: the subscriber-wide ceiling, counted only within a client's allowance. */
  perSubscriber?: RateLimitRule | false;
}

/**
 * Rate limits and brute-force protection. Every limit is ON by default; `false` turns one off; a rule
 * replaces the default. Defaults are per instance with the memory backend, shared with the Redis backend.
 */
export interface RateLimitOptions {
  /**
   * Where the counters live. `redis`: shared by every instance, on `redis` or, by default, on the RedisStore's
   * own client (one connection); if Redis fails or is slower than `timeout`, each instance counts for itself
   * meanwhile. `memory`: per process, no I/O. Default: `redis` when the store is a RedisStore (or `redis` is
   * given), else `memory`.
   */
  backend?: 'memory' | 'redis';
  /** A node-redis v5 client for the counters. Default: the RedisStore's. */
  redis?: RateLimitRedisClient;
  /** Prefix of the counters' Redis keys. Default: the RedisStore's prefix + `rl:` (else `netauth:rl:`). */
  keyPrefix?: string;
  /** Milliseconds a Redis counter may take before the per-process counter answers instead. Default 500. */
  timeout?: number;
  /** GET /authorize, per device address (an IPv6 address counts by its /64). Default 300 per 60 s. */
  authorize?: { perAddress?: RateLimitRule | false };
  /**
   * POST /bc-authorize. Defaults: per client 3000 per 60 s; per client and subscriber 60 per 600 s; per subscriber,
   * all clients together, 600 per 600 s (a ceiling no one client can reach: its traffic stops at its own allowance).
   */
  bcAuthorize?: SubscriberLimitRules;
  /** POST /token. Defaults: per client 6000 per 60 s; per client and subscriber 300 per 60 s; per subscriber 3000 per 60 s. */
  token?: SubscriberLimitRules;
  /**
   * Refused client credentials (wrong secret, wrong method, unknown client) on every client-authenticated
   * endpoint, counted where they come from, so no one can lock a client out from an address that has not
   * failed. Defaults: per registered client id (as the registry resolves it) and address, 30 per 900 s; per
   * address, for ids that name no client, 30 per 900 s. Successes do not count.
   */
  clientAuthentication?: { perClientAndAddress?: FailureLimitRule | false; perAddress?: FailureLimitRule | false };
}

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
  clientAuthentication: { perClientAndAddress: { failures: 30, duration: 900 }, perAddress: { failures: 30, duration: 900 } },
} as const;

export type LimitedEndpoint = 'bc-authorize' | 'token';

/** Which subscriber limit refused a request, and for how long. */
export interface SubscriberLimitHit {
  limit: 'client_subscriber' | 'subscriber';
  retryAfter: number;
}

/**
 * A request over a limit: 429 `temporarily_unavailable` with `Retry-After`.
 *
 * Why this code: RFC 6749 defines `temporarily_unavailable` (§4.1.2.1) for a server "temporarily unable to
 * handle the request due to a temporary overloading", which is what a rate limit tells the client; it is the
 * registered code every OAuth client library already knows, and docs/protocol.md lists it for the frontend flow.
 * No RFC or CAMARA profile registers a rate-limit error code for OAuth endpoints (CAMARA's `429
 * TOO_MANY_REQUESTS` is for the network APIs' own error model), and an unregistered `rate_limited` would reach
 * clients as an unknown error. The status 429 (RFC 6585) with `Retry-After` says the rest. CIBA polls get
 * `slow_down` instead (CIBA Core §11), and /authorize, once the redirect target is known, redirects with it.
 */
export function rateLimitedError(retryAfter: number, description = 'too many requests; retry later'): OAuthError {
  return new OAuthError('temporarily_unavailable', description, { status: 429, headers: { 'Retry-After': String(retryAfter) } });
}

/**
 * The counting key of a network address: an IPv6 address by its /64 (one subscriber's or host's prefix, so
 * rotating addresses within it does not escape), IPv4 and IPv4-mapped addresses as they are.
 */
export function addressKey(ip: string | undefined): string {
  if (ip === undefined || ip === '') return 'unknown';
  try {
    let address = ipaddr.parse(ip);
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) address = (address as ipaddr.IPv6).toIPv4Address();
    if (address.kind() === 'ipv4') return address.toString();
    return `${(address as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return ip.slice(0, 64);
  }
}

/** Ids as counting keys: short ones as they are, long ones hashed (bounded key size). */
function idKey(id: string): string {
  return id.length <= 128 ? id : `#${createHash('sha256').update(id).digest('base64url')}`;
}

/** Two ids (or an id and an address) as one counting key: each part escaped, so no two pairs share a key. */
function pairKey(a: string, b: string): string {
  return idKey(`${encodeURIComponent(a)}:${encodeURIComponent(b)}`);
}

/** The rule in force: the option's, the default when absent, none when `false`. */
function resolveRule<R extends RateLimitRule | FailureLimitRule>(name: string, value: R | false | undefined, fallback: R): R | undefined {
  if (value === false) return undefined;
  const rule = value ?? fallback;
  const count = 'points' in rule ? rule.points : rule.failures;
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(rule.duration) || rule.duration < 1) {
    throw new TypeError(`rateLimits.${name} needs whole, positive numbers`);
  }
  return rule;
}

type Make = (name: string, points: number, duration: number) => RateLimiterAbstract;

/**
 * The gateway's limits over rate-limiter-flexible. Methods never reject: a limiter failure lets the request
 * through (and is reported), since a broken counter must not take the service down; with the Redis backend a
 * per-process counter answers instead first.
 */
export class RateLimits {
  private readonly authorizePerAddress: RateLimiterAbstract | undefined;
  private readonly perClient: Partial<Record<LimitedEndpoint, RateLimiterAbstract>> = {};
  private readonly perClientAndSubscriber: Partial<Record<LimitedEndpoint, RateLimiterAbstract>> = {};
  private readonly perSubscriber: Partial<Record<LimitedEndpoint, RateLimiterAbstract>> = {};
  /** The lock-out: refused credentials per (registered client id, address), and per address for unknown ids. */
  private readonly failuresPerClientAndAddress: FailureBudget | undefined;
  private readonly failuresPerAddress: FailureBudget | undefined;
  /** Opens the store's Redis client for the counters (Redis backend on the store's client); gone once done. */
  private open: (() => Promise<void>) | undefined;
  private opening: Promise<void> | undefined;

  constructor(
    options: RateLimitOptions,
    store: Store,
    private readonly onError: (error: unknown) => void,
  ) {
    const o = options;
    const D = RATE_LIMIT_DEFAULTS;
    const backend = limiterFactory(options, store);
    const make = backend.make;
    this.open = backend.open;

    const perAddress = resolveRule('authorize.perAddress', o.authorize?.perAddress, D.authorize.perAddress);
    this.authorizePerAddress = perAddress && make('authorize:address', perAddress.points, perAddress.duration);
    for (const [endpoint, name, group, defaults] of [
      ['bc-authorize', 'bcAuthorize', o.bcAuthorize, D.bcAuthorize],
      ['token', 'token', o.token, D.token],
    ] as const) {
      const client = resolveRule(`${name}.perClient`, group?.perClient, defaults.perClient);
      const pair = resolveRule(`${name}.perClientAndSubscriber`, group?.perClientAndSubscriber, defaults.perClientAndSubscriber);
      const subscriber = resolveRule(`${name}.perSubscriber`, group?.perSubscriber, defaults.perSubscriber);
      if (client) this.perClient[endpoint] = make(`${endpoint}:client`, client.points, client.duration);
      if (pair) this.perClientAndSubscriber[endpoint] = make(`${endpoint}:client-subscriber`, pair.points, pair.duration);
      if (subscriber) this.perSubscriber[endpoint] = make(`${endpoint}:subscriber`, subscriber.points, subscriber.duration);
    }
    const ca = o.clientAuthentication;
    if (ca !== undefined && 'perClient' in ca) {
      throw new TypeError(
        'rateLimits.clientAuthentication.perClient is gone: failures now count per client id and address; use perClientAndAddress',
      );
    }
    const failPair = resolveRule('clientAuthentication.perClientAndAddress', ca?.perClientAndAddress, D.clientAuthentication.perClientAndAddress);
    const failAddress = resolveRule('clientAuthentication.perAddress', ca?.perAddress, D.clientAuthentication.perAddress);
    const budget = (name: string, rule: FailureLimitRule): FailureBudget =>
      new FailureBudget(
        make(`auth-attempts:${name}`, rule.failures, rule.duration),
        make(`auth-failures:${name}`, rule.failures, rule.duration),
        rule.failures,
        (operation) => this.guarded(operation),
      );
    this.failuresPerClientAndAddress = failPair && budget('client-address', failPair);
    this.failuresPerAddress = failAddress && budget('address', failAddress);
  }

  /** GET /authorize: one request from `ip`. Seconds to wait when over the limit, else undefined. */
  authorize(ip: string | undefined): Promise<number | undefined> {
    return this.consume(this.authorizePerAddress, addressKey(ip));
  }

  /** One request of an authenticated client. */
  client(endpoint: LimitedEndpoint, clientId: string): Promise<number | undefined> {
    return this.consume(this.perClient[endpoint], idKey(clientId));
  }

  /**
   * One request of a client concerning a subscriber (by the operator's subscriber id): the client's allowance
   * for that subscriber first, then the subscriber-wide ceiling, which counts only requests within a client's
   * allowance, so one client's excess never uses up what other clients may ask for the same subscriber.
   */
  async subscriber(endpoint: LimitedEndpoint, clientId: string, subscriberId: string): Promise<SubscriberLimitHit | undefined> {
    const pair = await this.consume(this.perClientAndSubscriber[endpoint], pairKey(clientId, subscriberId));
    if (pair !== undefined) return { limit: 'client_subscriber', retryAfter: pair };
    const all = await this.consume(this.perSubscriber[endpoint], idKey(subscriberId));
    return all === undefined ? undefined : { limit: 'subscriber', retryAfter: all };
  }

  /**
   * Reserves one failure slot before a credential check: per (client id, address) when the id names a
   * registered client (`clientId`, the registry's canonical id, so variants of a locked id are the same
   * client), else per address. A slot, or the seconds to wait when the budget is spent (or, across instances,
   * full of checks in flight). A client's own requests from an address that has not failed always get a slot.
   */
  reserve(clientId: string | undefined, ip: string | undefined): Promise<Reservation> {
    const address = addressKey(ip);
    const budget = clientId === undefined ? this.failuresPerAddress : this.failuresPerClientAndAddress;
    if (budget === undefined) return Promise.resolve({ slot: { release: () => {}, spend: async () => {} } });
    return budget.reserve(clientId === undefined ? address : pairKey(clientId, address));
  }

  /** The store's client may not be open yet: the store opens it on its first operation, the counters may come first. */
  private opened(): Promise<void> {
    const open = this.open;
    if (!open) return Promise.resolve();
    this.opening ??= open().then(() => {
      this.open = undefined;
    });
    return this.opening;
  }

  /** Runs a counter operation once the backend is open; a failure is reported and lets the request through. */
  private async guarded<T>(operation: () => Promise<T>): Promise<T | undefined> {
    try {
      if (this.open) await this.opened();
      return await operation();
    } catch (error) {
      this.onError(error);
      return undefined;
    }
  }

  /** Counts one request: seconds to wait when it is over the limit, else undefined. */
  private async consume(limiter: RateLimiterAbstract | undefined, key: string): Promise<number | undefined> {
    if (limiter === undefined) return undefined;
    return this.guarded(() =>
      limiter.consume(key).then(
        () => undefined,
        (rejection: unknown) => {
          if (rejection instanceof RateLimiterRes) return seconds(rejection.msBeforeNext);
          throw rejection;
        },
      ),
    );
  }
}

/** Memory limiters, or Redis limiters with a per-process memory limiter as their insurance. */
function limiterFactory(options: RateLimitOptions, store: Store): { make: Make; open?: () => Promise<void> } {
  const redisStore = store instanceof RedisStore ? store : undefined;
  const storeClient = redisStore?.nodeRedisClient();
  const backend = options.backend ?? (options.redis !== undefined || storeClient !== undefined ? 'redis' : 'memory');
  if (backend !== 'memory' && backend !== 'redis') throw new TypeError("rateLimits.backend must be 'memory' or 'redis'");
  const memory: Make = (name, points, duration) => new RateLimiterMemory({ keyPrefix: name, points, duration });
  if (backend === 'memory') return { make: memory };

  const client = options.redis ?? storeClient;
  if (client === undefined) throw new TypeError("rateLimits.backend 'redis' needs rateLimits.redis, or a RedisStore with a node-redis client");
  const prefix = options.keyPrefix ?? `${redisStore?.prefix ?? 'netauth:'}rl:`;
  const timeoutMs = options.timeout ?? 500;
  if (!(timeoutMs > 0)) throw new TypeError('rateLimits.timeout must be a positive number of milliseconds');
  const make: Make = (name, points, duration) =>
    new RLWrapperTimeouts({
      limiter: new RateLimiterRedis({
        storeClient: client,
        // node-redis v4+ (rate-limiter-flexible's README: "set useRedisPackage" for the `redis` package).
        useRedisPackage: true,
        keyPrefix: `${prefix}${name}`,
        points,
        duration,
        insuranceLimiter: memory(name, points, duration),
      }),
      timeoutMs,
    });
  // A failed open() (Redis down at start-up) leaves the per-process counters to answer until Redis is back.
  return options.redis === undefined && redisStore ? { make, open: () => redisStore.open().catch(() => {}) } : { make };
}

/** Reports a limit reached and makes its 429. */
export function overLimit(events: EventHub, event: RateLimitedEvent, description?: string): OAuthError {
  events.emit('rate.limited', event);
  return rateLimitedError(event.retryAfter, description);
}
