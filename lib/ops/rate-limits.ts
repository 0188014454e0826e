import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { OAuthError } from '../errors.js';
import type { Store } from '../stores/store.js';
import { RedisStore } from '../stores/redis.js';
import type { EventHub, RateLimitedEvent } from './events.js';

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
  /** POST /bc-authorize. Defaults: per client 3000 per 60 s; per subscriber 60 per 600 s. */
  bcAuthorize?: { perClient?: RateLimitRule | false; perSubscriber?: RateLimitRule | false };
  /** POST /token. Defaults: per client 6000 per 60 s; per subscriber 300 per 60 s. */
  token?: { perClient?: RateLimitRule | false; perSubscriber?: RateLimitRule | false };
  /**
   * Failed client authentications (unknown client, wrong secret, wrong method) on every client-authenticated
   * endpoint. Defaults: per registered client id 50 per 900 s; per address 30 per 900 s. Successes do not count.
   */
  clientAuthentication?: { perClient?: FailureLimitRule | false; perAddress?: FailureLimitRule | false };
}

export const RATE_LIMIT_DEFAULTS = {
  authorize: { perAddress: { points: 300, duration: 60 } },
  bcAuthorize: { perClient: { points: 3000, duration: 60 }, perSubscriber: { points: 60, duration: 600 } },
  token: { perClient: { points: 6000, duration: 60 }, perSubscriber: { points: 300, duration: 60 } },
  clientAuthentication: { perClient: { failures: 50, duration: 900 }, perAddress: { failures: 30, duration: 900 } },
} as const;

export type LimitedEndpoint = 'bc-authorize' | 'token';

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

/** Seconds to wait, whole and at least 1. */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
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

/** Expiring set of keys known to be locked: lets this process refuse them with no I/O and no secret check. */
class LocalLocks {
  private readonly until = new Map<string, number>();

  lockedFor(key: string, now: number): number | undefined {
    const until = this.until.get(key);
    if (until === undefined) return undefined;
    if (until <= now) {
      this.until.delete(key);
      return undefined;
    }
    return until - now;
  }

  lock(key: string, until: number): void {
    // Bounded: past this size the oldest knowledge goes (the shared counters still hold the truth).
    if (this.until.size >= 10_000) this.until.clear();
    this.until.set(key, until);
  }
}

/**
 * The gateway's limits over rate-limiter-flexible. Methods never reject: a limiter failure lets the request
 * through (and is reported), since a broken counter must not take the service down; with the Redis backend a
 * per-process counter answers instead first.
 */
export class RateLimits {
  private readonly authorizePerAddress: RateLimiterAbstract | undefined;
  private readonly perClient: Partial<Record<LimitedEndpoint, RateLimiterAbstract>> = {};
  private readonly perSubscriber: Partial<Record<LimitedEndpoint, RateLimiterAbstract>> = {};
  private readonly failuresPerClient: RateLimiterAbstract | undefined;
  private readonly failuresPerAddress: RateLimiterAbstract | undefined;
  private readonly failureThreshold: { client: number; address: number };
  private readonly locks = new LocalLocks();
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
      const subscriber = resolveRule(`${name}.perSubscriber`, group?.perSubscriber, defaults.perSubscriber);
      if (client) this.perClient[endpoint] = make(`${endpoint}:client`, client.points, client.duration);
      if (subscriber) this.perSubscriber[endpoint] = make(`${endpoint}:subscriber`, subscriber.points, subscriber.duration);
    }
    const ca = o.clientAuthentication;
    const failClient = resolveRule('clientAuthentication.perClient', ca?.perClient, D.clientAuthentication.perClient);
    const failAddress = resolveRule('clientAuthentication.perAddress', ca?.perAddress, D.clientAuthentication.perAddress);
    this.failuresPerClient = failClient && make('auth-failures:client', failClient.failures, failClient.duration);
    this.failuresPerAddress = failAddress && make('auth-failures:address', failAddress.failures, failAddress.duration);
    this.failureThreshold = { client: failClient?.failures ?? Infinity, address: failAddress?.failures ?? Infinity };
  }

  /** GET /authorize: one request from `ip`. Seconds to wait when over the limit, else undefined. */
  authorize(ip: string | undefined): Promise<number | undefined> {
    return this.consume(this.authorizePerAddress, addressKey(ip));
  }

  /** One request of an authenticated client. */
  client(endpoint: LimitedEndpoint, clientId: string): Promise<number | undefined> {
    return this.consume(this.perClient[endpoint], idKey(clientId));
  }

  /** One request concerning a subscriber (by the operator's subscriber id). */
  subscriber(endpoint: LimitedEndpoint, subscriberId: string): Promise<number | undefined> {
    return this.consume(this.perSubscriber[endpoint], idKey(subscriberId));
  }

  /**
   * Whether this process already knows the client id or the address to be locked out: seconds to wait, with
   * no I/O, so a locked-out guesser costs no secret comparison.
   */
  lockedLocally(clientId: string | undefined, ip: string | undefined): number | undefined {
    const now = Date.now();
    const byAddress = this.failuresPerAddress ? this.locks.lockedFor(`a:${addressKey(ip)}`, now) : undefined;
    const byClient = clientId !== undefined && this.failuresPerClient ? this.locks.lockedFor(`c:${idKey(clientId)}`, now) : undefined;
    const ms = Math.max(byAddress ?? 0, byClient ?? 0);
    return ms > 0 ? seconds(ms) : undefined;
  }

  /**
   * The lock-out state of a client id (a registered client's, or undefined) and an address, from the counters:
   * seconds to wait when either has reached its failure threshold.
   */
  async lockedOut(clientId: string | undefined, ip: string | undefined): Promise<number | undefined> {
    const address = addressKey(ip);
    const [byAddress, byClient] = await Promise.all([
      this.failures(this.failuresPerAddress, address),
      clientId === undefined ? undefined : this.failures(this.failuresPerClient, idKey(clientId)),
    ]);
    let ms = 0;
    if (byAddress && byAddress.consumedPoints >= this.failureThreshold.address) {
      ms = Math.max(ms, byAddress.msBeforeNext);
      this.locks.lock(`a:${address}`, Date.now() + byAddress.msBeforeNext);
    }
    if (byClient && clientId !== undefined && byClient.consumedPoints >= this.failureThreshold.client) {
      ms = Math.max(ms, byClient.msBeforeNext);
      this.locks.lock(`c:${idKey(clientId)}`, Date.now() + byClient.msBeforeNext);
    }
    return ms > 0 ? seconds(ms) : undefined;
  }

  /**
   * Counts a failed client authentication against the address and, when it names a registered client, that
   * client id. Seconds to wait when this failure went past a threshold (then the answer is 429, not 401).
   */
  async failed(clientId: string | undefined, ip: string | undefined): Promise<number | undefined> {
    const address = addressKey(ip);
    const [byAddress, byClient] = await Promise.all([
      this.consume(this.failuresPerAddress, address),
      clientId === undefined ? undefined : this.consume(this.failuresPerClient, idKey(clientId)),
    ]);
    const now = Date.now();
    if (byAddress !== undefined) this.locks.lock(`a:${address}`, now + byAddress * 1000);
    if (byClient !== undefined && clientId !== undefined) this.locks.lock(`c:${idKey(clientId)}`, now + byClient * 1000);
    const wait = Math.max(byAddress ?? 0, byClient ?? 0);
    return wait > 0 ? wait : undefined;
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

  private async consume(limiter: RateLimiterAbstract | undefined, key: string): Promise<number | undefined> {
    if (limiter === undefined) return undefined;
    try {
      if (this.open) await this.opened();
      await limiter.consume(key);
      return undefined;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return seconds(rejection.msBeforeNext);
      this.onError(rejection);
      return undefined;
    }
  }

  private async failures(limiter: RateLimiterAbstract | undefined, key: string): Promise<RateLimiterRes | undefined> {
    if (limiter === undefined) return undefined;
    try {
      if (this.open) await this.opened();
      return (await limiter.get(key)) ?? undefined;
    } catch (error) {
      this.onError(error);
      return undefined;
    }
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
  return options.redis === undefined && redisStore ? { make, open: () => redisStore.open() } : { make };
}

/** Reports a limit reached and makes its 429. */
export function overLimit(events: EventHub, event: RateLimitedEvent, description?: string): OAuthError {
  events.emit('rate.limited', event);
  return rateLimitedError(event.retryAfter, description);
}
