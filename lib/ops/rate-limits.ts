import { sha256 } from '../crypto.js';
import ipaddr from 'ipaddr.js';
import { OAuthError } from '../errors.js';
import type { Store } from '../stores/store.js';
import { RedisConnection, type RedisStoreClient } from '../stores/redis-connection.js';
import type { EventHub, RateLimitedEvent } from './events.js';
import { FailureBudget, HOLD_MS, NO_SLOT, WINDOW_MARGIN_MS, seconds, type Reservation } from './lockout.js';
import { MemoryCounters, RedisCounters, type CounterKey, type CounterLimit, type Counters } from './counters.js';
import { RATE_LIMIT_COUNTER_DEFAULTS, RATE_LIMIT_DEFAULTS, REDIS_STORE_DEFAULTS } from '../defaults.js';

/** At most `points` requests per `duration` seconds. */
export interface RateLimitRule {
  /** Requests allowed in a window. */
  points: number;
  /** The window, in seconds. */
  duration: number;
}

/** At most `failures` failed client authentications per `duration` seconds; then locked until the window passes. */
export interface FailureLimitRule {
  /** Failures allowed in a window. */
  failures: number;
  /** The window, in seconds; also how long the lock-out lasts at most. */
  duration: number;
}

/**
 * A Redis client for the counters: any client RedisStore accepts, a node-redis (v5) `createClient()`,
 * `createCluster()` or `createSentinel()` client. Give it `disableOfflineQueue: true` (a cluster: in `defaults`),
 * so a command fails at once (and the per-process counters take over) while Redis is unreachable.
 */
export type RateLimitRedisClient = RedisStoreClient;

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
   * own connection; if Redis fails or is slower than `timeout`, each instance counts for itself meanwhile (the
   * lock-out refuses instead) and says so (the `rate.fallback` event). `memory`: per process, no I/O.
   * @defaultValue `redis` when the store shares its counters (`Store.counters`, as RedisStore does) or `redis` is given, else `memory`
   */
  backend?: 'memory' | 'redis';
  /**
   * A node-redis v5 client for the counters: single node, cluster or sentinel.
   * @defaultValue the store's counters
   */
  redis?: RateLimitRedisClient;
  /**
   * Prefix of the counters' Redis keys (no `{` or `}`: keys carry their own hash tags).
   * @defaultValue the store's prefix + `rl:` when it shares its counters (else `netauth:rl:`)
   */
  keyPrefix?: string;
  /**
   * Milliseconds a Redis counter may take before the per-process counter answers instead.
   * @defaultValue 500
   */
  timeout?: number;
  /**
   * GET /authorize and the subscriber's consents page, per device address (an IPv6 address counts by its /64;
   * behind CGNAT, with `network.portHeader`, per address and port).
   * @defaultValue 300 per 60 s
   */
  authorize?: {
    /** Requests per device address; `false` turns it off. */
    perAddress?: RateLimitRule | false;
  };
  /**
   * POST /bc-authorize. Per subscriber counts all clients together: a ceiling no one client can reach (its traffic
   * stops at its own allowance).
   * @defaultValue per client 3000 per 60 s; per client and subscriber 60 per 600 s; per subscriber 600 per 600 s
   */
  bcAuthorize?: SubscriberLimitRules;
  /**
   * POST /token.
   * @defaultValue per client 6000 per 60 s; per client and subscriber 300 per 60 s; per subscriber 3000 per 60 s
   */
  token?: SubscriberLimitRules;
  /**
   * Client-credentials tokens issued per client, so one low-privilege client cannot grow the store without bound:
   * with a window at least the tokens' lifetime, at most twice `points` of its tokens live at once.
   * Past it 429 (the client should reuse the token it holds until it expires).
   * @defaultValue 100 per 3600 s
   */
  clientCredentials?: {
    /** Tokens issued to one client; `false` turns it off. */
    perClient?: RateLimitRule | false;
  };
  /**
   * DPoP proofs accepted per key (`jkt`, its JWK thumbprint) and per client, at the token endpoint and every guard
   * together: each leaves a replay entry (its `jti`) in the store for up to 605 s, so one key holder's calls cannot
   * grow the store without bound, nor a client's many keys (one per bound token) together. Only fresh proofs count
   * (a replayed proof is refused before), and only the key's holder can make them, so no one else can use up an
   * allowance. Past either, 429 with `Retry-After` (a CIBA poll: `slow_down`), reported as `rate.limited`
   * (`dpop_key` or `dpop_client`).
   */
  dpopProofs?: {
    /**
     * Fresh proofs of one key; `false` turns it off.
     * @defaultValue 60000 per 900 s (at most 120000 entries of one key live)
     */
    perKey?: RateLimitRule | false;
    /**
     * Fresh proofs of every key of one client together (the client the token endpoint authenticated, or the
     * token's at a guard); `false` turns it off.
     * @defaultValue 300000 per 900 s (at most 600000 entries of one client live)
     */
    perClient?: RateLimitRule | false;
  };
  /**
   * Refused client credentials (wrong secret, wrong method, unknown client) on every client-authenticated
   * endpoint, counted where they come from, so no one can lock a client out from an address that has not
   * failed: per registered client id (as the registry resolves it) and address, and per address for ids that name
   * no client. Successes do not count.
   * @defaultValue per client and address 30 per 900 s; per address 30 per 900 s
   */
  clientAuthentication?: {
    /** Failures for one registered client id from one address. */
    perClientAndAddress?: FailureLimitRule | false;
    /** Failures naming no registered client, per address. */
    perAddress?: FailureLimitRule | false;
  };
}

export type LimitedEndpoint = 'bc-authorize' | 'token';

/** Which DPoP proof limit refused a fresh proof, and for how long. */
export interface DpopProofLimitHit {
  limit: 'dpop_key' | 'dpop_client';
  retryAfter: number;
}

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
  return new OAuthError('temporarily_unavailable', description, {
    status: 429,
    headers: { 'Retry-After': String(retryAfter) },
  });
}

/** Every request limit and the lock-out off: the counters only count what a caller passes beside them. */
export const NO_REQUEST_LIMITS: RateLimitOptions = {
  authorize: { perAddress: false },
  bcAuthorize: { perClient: false, perClientAndSubscriber: false, perSubscriber: false },
  token: { perClient: false, perClientAndSubscriber: false, perSubscriber: false },
  clientCredentials: { perClient: false },
  dpopProofs: { perKey: false, perClient: false },
  clientAuthentication: { perClientAndAddress: false, perAddress: false },
};

/**
 * The lock-out's shared counters cannot be reached, so no credentials are compared: answered as every outage is,
 * 503 `temporarily_unavailable` with `Retry-After`. Nothing is known against the client, so not a 429.
 */
export function countersUnavailableError(retryAfter: number): OAuthError {
  return new OAuthError('temporarily_unavailable', 'the service is temporarily unavailable', {
    headers: { 'Retry-After': String(retryAfter) },
  });
}

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const CANONICAL_IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);

/**
 * The counting key of a network address: an IPv6 address by its /64 (one subscriber's or host's prefix, so
 * rotating addresses within it does not escape), IPv4 and IPv4-mapped addresses as they are.
 */
export function addressKey(ip: string | undefined): string {
  if (ip === undefined || ip === '') return 'unknown';
  // Node gives an IPv4 peer in canonical dotted-decimal form, which is its own key: no parse on every request.
  if (CANONICAL_IPV4.test(ip)) return ip;
  try {
    let address = ipaddr.parse(ip);
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
      address = (address as ipaddr.IPv6).toIPv4Address();
    if (address.kind() === 'ipv4') return address.toString();
    return `${(address as ipaddr.IPv6).parts
      .slice(0, 4)
      .map((p) => p.toString(16))
      .join(':')}::/64`;
  } catch {
    return ip.slice(0, 64);
  }
}

/**
 * An id (or address) as part of a counter's key: as it is, but for the characters that would end a Redis
 * Cluster hash tag (`{`, `}`, and `%` so no two ids meet); longer than 128 characters, hashed (bounded key size).
 */
function part(id: string): string {
  const escaped = id.replace(/[%{}]/g, (c) => encodeURIComponent(c));
  return escaped.length <= 128 ? escaped : `#${sha256(id)}`;
}

/** Clients (and DPoP keys) with points taken ahead, at most: past it the oldest entry is forgotten first. */
export const MAX_AHEAD = 10_000;

/** Points of a client's limit an instance takes at once with shared counters: 1 % of the limit, 1 to 100. */
function pointsAhead(points: number): number {
  return Math.min(100, Math.max(1, Math.floor(points / 100)));
}

/** The rule in force: the option's, the default when absent, none when `false`. */
function resolveRule<R extends RateLimitRule | FailureLimitRule>(
  name: string,
  value: R | false | undefined,
  fallback: R,
): R | undefined {
  if (value === false) return undefined;
  const rule = value ?? fallback;
  const count = 'points' in rule ? rule.points : rule.failures;
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(rule.duration) || rule.duration < 1) {
    throw new TypeError(`rateLimits.${name} needs whole, positive numbers`);
  }
  return rule;
}

/** Points of one client's limit this instance took ahead, and until when they may be used. */
interface Ahead {
  left: number;
  until: number;
  /** The next points, asked for when the last of these was used. */
  next?: Promise<TakenAhead | undefined>;
}

/** An answer to taking points ahead, and when it came (its `msBeforeNext` counts from then). */
interface TakenAhead {
  taken: number;
  msBeforeNext: number;
  at: number;
}

/**
 * The gateway's limits. Methods never reject: a counter failure lets the request through (and is reported),
 * since a broken counter must not take the service down; with the Redis backend this process's memory
 * counters answer first (lib/ops/counters.ts).
 *
 * Round trips with the Redis backend (docs/operations.md, "Cost"): the subscriber limits of a request are one
 * script (the client's allowance for the subscriber and the subscriber-wide ceiling, keys tagged by the
 * subscriber); a client's own limit takes 1 % of its points at a time and counts the rest here; the lock-out
 * slot of a client that succeeded is held for its next check (lib/ops/lockout.ts). So a request of a client that
 * has not failed costs one round trip for its limits when it concerns a subscriber, none otherwise.
 */
export class RateLimits {
  private readonly counters: Counters;
  private readonly authorizePerAddress: CounterLimit | undefined;
  private readonly perClient: Partial<Record<LimitedEndpoint, CounterLimit>> = {};
  private readonly perClientAndSubscriber: Partial<Record<LimitedEndpoint, CounterLimit>> = {};
  private readonly perSubscriber: Partial<Record<LimitedEndpoint, CounterLimit>> = {};
  private readonly ahead = new Map<string, Ahead>();
  private readonly twoLeggedPerClient: CounterLimit | undefined;
  private readonly dpopPerKey: CounterLimit | undefined;
  private readonly dpopPerClient: CounterLimit | undefined;
  private readonly codesPerSubscriber: CounterLimit | undefined;
  /** Wrong confirmation codes per subscriber (`consentConfirmation.wrongCodesPerSubscriber`). */
  private readonly wrongCodesPerSubscriber: FailureBudget | undefined;
  /** The lock-out: refused credentials per (registered client id, address), and per address for unknown ids. */
  private readonly failuresPerClientAndAddress: FailureBudget | undefined;
  private readonly failuresPerAddress: FailureBudget | undefined;

  constructor(
    options: RateLimitOptions,
    store: Store,
    private readonly onError: (error: unknown) => void,
    events: EventHub,
    /** `consentConfirmation.codesPerSubscriber` and `wrongCodesPerSubscriber`, checked with the confirmation's options. */
    confirmationCodes: { sent?: RateLimitRule; wrong?: RateLimitRule } = {},
    /** The gateway's clock (its `now` option): the memory windows, points taken ahead, held slots and local locks. */
    private readonly now: () => number = Date.now,
  ) {
    const o = options;
    const D = RATE_LIMIT_DEFAULTS;
    this.counters = countersFor(options, store, onError, events, now);
    const limit = (name: string, rule: RateLimitRule): CounterLimit => ({
      name,
      points: rule.points,
      duration: rule.duration,
    });

    const perAddress = resolveRule('authorize.perAddress', o.authorize?.perAddress, D.authorize.perAddress);
    this.authorizePerAddress = perAddress && limit('authorize:address', perAddress);
    for (const [endpoint, name, group, defaults] of [
      ['bc-authorize', 'bcAuthorize', o.bcAuthorize, D.bcAuthorize],
      ['token', 'token', o.token, D.token],
    ] as const) {
      const client = resolveRule(`${name}.perClient`, group?.perClient, defaults.perClient);
      const pair = resolveRule(
        `${name}.perClientAndSubscriber`,
        group?.perClientAndSubscriber,
        defaults.perClientAndSubscriber,
      );
      const subscriber = resolveRule(`${name}.perSubscriber`, group?.perSubscriber, defaults.perSubscriber);
      if (client) this.perClient[endpoint] = limit(`${endpoint}:client`, client);
      if (pair) this.perClientAndSubscriber[endpoint] = limit(`${endpoint}:client-subscriber`, pair);
      if (subscriber) this.perSubscriber[endpoint] = limit(`${endpoint}:subscriber`, subscriber);
    }
    const twoLeggedRule = o.clientCredentials?.perClient;
    const twoLegged = resolveRule('clientCredentials.perClient', twoLeggedRule, D.clientCredentials.perClient);
    this.twoLeggedPerClient = twoLegged && limit('client-credentials:client', twoLegged);
    const dpopKey = resolveRule('dpopProofs.perKey', o.dpopProofs?.perKey, D.dpopProofs.perKey);
    this.dpopPerKey = dpopKey && limit('dpop-proofs:key', dpopKey);
    const dpopClient = resolveRule('dpopProofs.perClient', o.dpopProofs?.perClient, D.dpopProofs.perClient);
    this.dpopPerClient = dpopClient && limit('dpop-proofs:client', dpopClient);
    const { sent, wrong } = confirmationCodes;
    this.codesPerSubscriber = sent && limit('confirmation-codes:subscriber', sent);
    // A slot per typed code, given back at once when it is right (no holding: a subscriber types a few a day).
    this.wrongCodesPerSubscriber =
      wrong &&
      new FailureBudget(
        this.counters,
        { name: 'code-attempts:subscriber', points: wrong.points, duration: wrong.duration },
        { name: 'wrong-codes:subscriber', points: wrong.points, duration: wrong.duration },
        (operation) => this.guarded(operation),
        0,
        now,
      );
    const ca = o.clientAuthentication;
    if (ca !== undefined && 'perClient' in ca) {
      throw new TypeError(
        'rateLimits.clientAuthentication.perClient is gone: failures now count per client id and address; use perClientAndAddress',
      );
    }
    const failPair = resolveRule(
      'clientAuthentication.perClientAndAddress',
      ca?.perClientAndAddress,
      D.clientAuthentication.perClientAndAddress,
    );
    const failAddress = resolveRule(
      'clientAuthentication.perAddress',
      ca?.perAddress,
      D.clientAuthentication.perAddress,
    );
    const budget = (name: string, rule: FailureLimitRule): FailureBudget =>
      new FailureBudget(
        this.counters,
        { name: `auth-attempts:${name}`, points: rule.failures, duration: rule.duration },
        { name: `auth-failures:${name}`, points: rule.failures, duration: rule.duration },
        (operation) => this.guarded(operation),
        HOLD_MS,
        now,
      );
    this.failuresPerClientAndAddress = failPair && budget('client-address', failPair);
    this.failuresPerAddress = failAddress && budget('address', failAddress);
  }

  /**
   * GET /authorize (and the consents page): one request from the device at `ip`, behind CGNAT its `port` (the
   * port header's, when the network has one): each device behind a shared address counts apart. Seconds to wait
   * when over the limit, else undefined.
   */
  async authorize(device: { ip: string | undefined; port?: number }): Promise<number | undefined> {
    const limit = this.authorizePerAddress;
    if (limit === undefined) return undefined;
    const key = { tag: part(addressKey(device.ip)), ...(device.port !== undefined ? { rest: `:${device.port}` } : {}) };
    const refusal = await this.guarded(() => this.counters.chain([{ limit, key }]));
    return refusal && seconds(refusal.msBeforeNext);
  }

  /**
   * One request of an authenticated client. With shared counters the instance takes 1 % of the limit's points
   * at once (pointsAhead) and counts them out here, so most requests cost no round trip; no instance ever
   * takes more than the limit leaves, so the limit holds across instances (near it, a request may be refused
   * while another instance still holds a few points).
   */
  async client(endpoint: LimitedEndpoint, clientId: string): Promise<number | undefined> {
    const limit = this.perClient[endpoint];
    return limit && this.takeOne(limit, `${endpoint} ${clientId}`, part(clientId));
  }

  /**
   * One fresh DPoP proof of the key `jkt` (its replay entry written), made for `clientId`: the key's limit, then
   * the client's (every key of it together), and which refused it and for how long, else undefined. Counted as a
   * client's requests are (points taken ahead with shared counters): the guard's calls cost no round trip for it.
   */
  async dpopProof(jkt: string, clientId: string): Promise<DpopProofLimitHit | undefined> {
    const key = this.dpopPerKey;
    const byKey = key && (await this.takeOne(key, `dpop ${jkt}`, part(jkt)));
    if (byKey !== undefined) return { limit: 'dpop_key', retryAfter: byKey };
    const client = this.dpopPerClient;
    const byClient = client && (await this.takeOne(client, `dpop-client ${clientId}`, part(clientId)));
    return byClient === undefined ? undefined : { limit: 'dpop_client', retryAfter: byClient };
  }

  /**
   * One point of `limit` under the counter `tag`; `id` names what this instance took ahead for it. With shared
   * counters the next points are asked for as the last ones are used, not by the request that finds none: the
   * command goes to Redis with that request's own (node-redis sends the commands of one turn together), so a
   * client's count costs no round trip of its own (docs/redis-store.md, "Round trips").
   */
  private async takeOne(limit: CounterLimit, id: string, tag: string): Promise<number | undefined> {
    if (!this.counters.shared) {
      const answer = await this.guarded(() => this.counters.take(limit, { tag }, 1));
      return answer === undefined || answer.taken > 0 ? undefined : seconds(answer.msBeforeNext);
    }
    const ahead = this.ahead.get(id);
    if (ahead !== undefined) {
      if (ahead.left > 0 && this.now() < ahead.until) {
        ahead.left--;
        if (ahead.left === 0) ahead.next = this.takeAhead(limit, tag);
        return undefined;
      }
      this.ahead.delete(id);
      if (ahead.next !== undefined) {
        const next = await ahead.next;
        // A counter that failed lets the request through, as below. A refusal holds while its wait lasts, and
        // points while their window does; past either, the points are asked for again.
        if (next === undefined) return undefined;
        const now = this.now();
        if (next.taken === 0 && now < next.at + next.msBeforeNext) return seconds(next.at + next.msBeforeNext - now);
        if (next.taken > 0 && now < next.at + next.msBeforeNext - WINDOW_MARGIN_MS) return this.keepAhead(id, next);
      }
    }
    const a = await this.takeAhead(limit, tag);
    if (a === undefined) return undefined;
    if (a.taken === 0) return seconds(a.msBeforeNext);
    return this.keepAhead(id, a);
  }

  private async takeAhead(limit: CounterLimit, tag: string): Promise<TakenAhead | undefined> {
    const a = await this.guarded(() => this.counters.take(limit, { tag }, pointsAhead(limit.points)));
    return a && { taken: a.taken, msBeforeNext: a.msBeforeNext, at: this.now() };
  }

  /** Uses one of the points `a` took and keeps the rest for this instance's next requests. */
  private keepAhead(id: string, a: TakenAhead): undefined {
    if (a.taken > 1) {
      // Bounded: past MAX_AHEAD the oldest entry goes first (its points expire with their window in Redis). A Map
      // keeps insertion order, and an entry used up or expired was deleted above, so its first key is the oldest.
      if (this.ahead.size >= MAX_AHEAD && !this.ahead.has(id)) {
        const oldest = this.ahead.keys().next();
        if (!oldest.done) this.ahead.delete(oldest.value);
      }
      this.ahead.set(id, { left: a.taken - 1, until: a.at + a.msBeforeNext - WINDOW_MARGIN_MS });
    }
    return undefined;
  }

  /**
   * One confirmation code sent to a subscriber (by the operator's subscriber id) for `page`: seconds to wait when
   * over `consentConfirmation.codesPerSubscriber`, else undefined. Every code counts, as a refused one does. Each
   * page has its own budget, so the consents page's codes never spend those that confirm a consent.
   */
  async confirmationCode(subscriberId: string, page: 'consent' | 'consents'): Promise<number | undefined> {
    const limit = this.codesPerSubscriber;
    if (limit === undefined) return undefined;
    const key = { tag: part(subscriberId), ...(page === 'consents' ? { rest: ':consents' } : {}) };
    const refusal = await this.guarded(() => this.counters.chain([{ limit, key }]));
    return refusal && seconds(refusal.msBeforeNext);
  }

  /**
   * A slot to compare one typed confirmation code of a subscriber with: spent when the code is wrong, given back
   * when it is right; or the seconds until the subscriber's wrong codes (`wrongCodesPerSubscriber`) allow another.
   */
  async confirmationAttempt(subscriberId: string): Promise<Reservation> {
    const budget = this.wrongCodesPerSubscriber;
    if (budget === undefined) return { slot: NO_SLOT };
    return budget.reserve({ tag: part(subscriberId) });
  }

  /** One client-credentials token for `clientId`: seconds to wait when over its limit, else undefined. */
  async twoLeggedToken(clientId: string): Promise<number | undefined> {
    const limit = this.twoLeggedPerClient;
    if (limit === undefined) return undefined;
    const refusal = await this.guarded(() => this.counters.chain([{ limit, key: { tag: part(clientId) } }]));
    return refusal && seconds(refusal.msBeforeNext);
  }

  /**
   * One request of a client concerning a subscriber (by the operator's subscriber id): the client's allowance
   * for that subscriber first, then the subscriber-wide ceiling, which counts only requests within a client's
   * allowance, so one client's excess never uses up what other clients may ask for the same subscriber. Both
   * in one step (one script with Redis: their keys share the subscriber's hash tag).
   */
  async subscriber(
    endpoint: LimitedEndpoint,
    clientId: string,
    subscriberId: string,
  ): Promise<SubscriberLimitHit | undefined> {
    const entries: Array<{ limit: CounterLimit; key: CounterKey }> = [];
    const kinds: Array<SubscriberLimitHit['limit']> = [];
    const pair = this.perClientAndSubscriber[endpoint];
    const all = this.perSubscriber[endpoint];
    if (pair) {
      entries.push({ limit: pair, key: { tag: part(subscriberId), rest: part(clientId) } });
      kinds.push('client_subscriber');
    }
    if (all) {
      entries.push({ limit: all, key: { tag: part(subscriberId) } });
      kinds.push('subscriber');
    }
    if (entries.length === 0) return undefined;
    const refusal = await this.guarded(() => this.counters.chain(entries));
    return refusal && { limit: kinds[refusal.index]!, retryAfter: seconds(refusal.msBeforeNext) };
  }

  /**
   * Reserves one failure slot before a credential check: per (client id, address) when the id names a
   * registered client (`clientId`, the registry's canonical id, so variants of a locked id are the same
   * client), else per address. A slot, or the seconds to wait when the budget is spent (or, across instances,
   * full of checks in flight). A client's own requests from an address that has not failed always get a slot.
   */
  async reserve(clientId: string | undefined, ip: string | undefined): Promise<Reservation> {
    const address = part(addressKey(ip));
    const budget = clientId === undefined ? this.failuresPerAddress : this.failuresPerClientAndAddress;
    if (budget === undefined) return { slot: NO_SLOT };
    return budget.reserve(clientId === undefined ? { tag: address } : { tag: part(clientId), rest: address });
  }

  /** Gives back the lock-out slots this instance holds (netauth.close()). */
  async close(): Promise<void> {
    this.counters.close();
    await Promise.all([this.failuresPerClientAndAddress?.close(), this.failuresPerAddress?.close()]);
  }

  /** Runs a counter operation; a failure is reported and lets the request through. */
  private async guarded<T>(operation: () => Promise<T>): Promise<T | undefined> {
    try {
      return await operation();
    } catch (error) {
      this.onError(error);
      return undefined;
    }
  }
}

/** Memory counters, or Redis ones (the store's shared counters or a client given) with memory ones standing in. */
function countersFor(
  options: RateLimitOptions,
  store: Store,
  onError: (error: unknown) => void,
  events: EventHub,
  now: () => number,
): Counters {
  const given = options.redis;
  // Not asked for when the counters stay in memory: a store may open a connection for them.
  const shared = options.backend === 'memory' ? undefined : store.counters?.();
  const backend = options.backend ?? (given !== undefined || shared !== undefined ? 'redis' : 'memory');
  if (backend !== 'memory' && backend !== 'redis')
    throw new TypeError("rateLimits.backend must be 'memory' or 'redis'");
  const local = new MemoryCounters(now);
  if (backend === 'memory') return local;

  const storePrefix = shared?.prefix ?? REDIS_STORE_DEFAULTS.prefix;
  const prefix = options.keyPrefix ?? `${storePrefix}${RATE_LIMIT_COUNTER_DEFAULTS.keyPrefixSuffix}`;
  if (/[{}]/.test(prefix))
    throw new TypeError(
      `rateLimits.keyPrefix "${prefix}" contains a brace: the counters' keys carry their own hash tags`,
    );
  const timeoutMs = options.timeout ?? RATE_LIMIT_COUNTER_DEFAULTS.timeout;
  if (!(timeoutMs > 0)) throw new TypeError('rateLimits.timeout must be a positive number of milliseconds');
  // The store's own counters by default: one connection, and the store's handling of clusters and failovers.
  const connection = given === undefined ? shared : new RedisConnection({ client: given, timeout: timeoutMs, onError });
  if (connection === undefined) {
    throw new TypeError("rateLimits.backend 'redis' needs rateLimits.redis, or a store with counters() (RedisStore)");
  }
  return new RedisCounters(connection, prefix, timeoutMs, local, events, onError, now);
}

/** Reports a limit reached and makes its 429. */
export function overLimit(events: EventHub, event: RateLimitedEvent, description?: string): OAuthError {
  events.emit('rate.limited', event);
  return rateLimitedError(event.retryAfter, description);
}
