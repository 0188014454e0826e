/**
 * The counters behind the rate limits and the lock-out, on two backends with one meaning: fixed windows as
 * rate-limiter-flexible counts them (a counter starts its window of `duration` seconds at its first point; a
 * refused request is counted too), and every operation atomic.
 *
 * - memory: per process, no I/O (lib/ops/fixed-windows.ts);
 * - Redis: one Lua script per operation (lib/ops/counter-scripts.ts), run with EVALSHA where the store shares its
 *   counters (`Store.counters`: RedisStore's connection, a node-redis client, cluster client or sentinel client),
 *   or on the Redis `rateLimits.redis` names. rate-limiter-flexible's RateLimiterRedis counts one key per call
 *   with a full EVAL; here one call counts every counter a request needs (the per-(client, subscriber) allowance
 *   and the subscriber-wide ceiling, or a lock-out slot with the failures that tell a locked key from a busy
 *   one). The keys of one call share a Redis Cluster hash tag, so it runs on one shard.
 *
 * When Redis fails (an outage, a timeout, an ACL that refuses the scripts), the same operation runs on this
 * process's memory counters and the failure is reported, never hidden: the `rate.fallback` event (logged as a
 * warning, counted by the metrics) and, when Redis refused the scripts rather than being unavailable,
 * `RateLimitFallbackError` to `onError`. The request-rate limits keep holding, per instance; the lock-out's
 * reservations fail closed instead (a per-process budget would multiply it by the number of instances).
 */
import { FixedWindows } from './fixed-windows.js';
import { StoreUnavailableError, type SharedCounters } from '../stores/store.js';
import type { EventHub, RateFallbackEvent } from './events.js';
import { CHAIN, RELEASE, RESERVE, SPEND, TAKE } from './counter-scripts.js';

/** Where a counter is: its limit's name, the hash tag every counter of one call shares, then the rest of its key. */
export interface CounterKey {
  tag: string;
  rest?: string;
}

/** A family of counters, one per key: at most `points` per window of `duration` seconds. */
export interface CounterLimit {
  name: string;
  points: number;
  duration: number;
}

/** The first counter of a chain that refused the request, and milliseconds until its window ends. */
export interface Refusal {
  index: number;
  msBeforeNext: number;
}

/**
 * A lock-out slot taken (`shared`: counted in Redis, so other instances see it; `attempts`: the count with it), or
 * refused with the failures so far.
 */
export type ReserveAnswer =
  | { taken: true; attempts: number; msBeforeNext: number; shared: boolean }
  | { taken: false; failures: number; msBeforeNext: number }
  | { taken: false; unavailable: true; cause: unknown };

export interface Counters {
  /** Counters in Redis, shared by every instance: worth holding slots and taking points ahead (see lockout.ts, rate-limits.ts). */
  readonly shared: boolean;
  /** One request on each counter in turn, each counted only while every one before it let the request through. */
  chain(entries: ReadonlyArray<{ limit: CounterLimit; key: CounterKey }>): Promise<Refusal | undefined>;
  /** Up to `want` points at once (at least one is counted, as a refused request is): how many were taken. */
  take(limit: CounterLimit, key: CounterKey, want: number): Promise<{ taken: number; msBeforeNext: number }>;
  /** A lock-out slot: one more on `attempts` while it is under its points; else the failures counted so far. */
  reserve(attempts: CounterLimit, failures: CounterLimit, key: CounterKey): Promise<ReserveAnswer>;
  /** Gives a slot back (`shared`: where it was taken). */
  release(attempts: CounterLimit, key: CounterKey, shared: boolean): Promise<void>;
  /** Counts a failure: the failures so far and milliseconds until their window ends. */
  spend(failures: CounterLimit, key: CounterKey): Promise<{ failures: number; msBeforeNext: number }>;
  /** The gateway closes: what fails from now on is not reported. */
  close(): void;
}

/** The key of a counter as both backends write it (the Redis one under its prefix and limit name). */
export function keyText(key: CounterKey): string {
  return `{${key.tag}}${key.rest ?? ''}`;
}

/** Per-process counters: the memory backend, and Redis's stand-in while it fails. */
export class MemoryCounters implements Counters {
  readonly shared = false;
  private readonly limits = new Map<string, FixedWindows>();

  /** `now`: the gateway's clock (its `now` option), so the windows end when its tests say they do. */
  constructor(private readonly now: () => number = Date.now) {}

  private windows(limit: CounterLimit): FixedWindows {
    let windows = this.limits.get(limit.name);
    if (windows === undefined) {
      windows = new FixedWindows(limit.duration, this.now);
      this.limits.set(limit.name, windows);
    }
    return windows;
  }

  async chain(entries: ReadonlyArray<{ limit: CounterLimit; key: CounterKey }>): Promise<Refusal | undefined> {
    for (let index = 0; index < entries.length; index++) {
      const { limit, key } = entries[index]!;
      const counted = this.windows(limit).add(keyText(key), 1);
      if (counted.count > limit.points) return { index, msBeforeNext: counted.msBeforeNext };
    }
    return undefined;
  }

  // One point at a time: in one process taking ahead saves nothing.
  async take(limit: CounterLimit, key: CounterKey): Promise<{ taken: number; msBeforeNext: number }> {
    const counted = this.windows(limit).add(keyText(key), 1);
    return { taken: counted.count > limit.points ? 0 : 1, msBeforeNext: counted.msBeforeNext };
  }

  async reserve(attempts: CounterLimit, failures: CounterLimit, key: CounterKey): Promise<ReserveAnswer> {
    const text = keyText(key);
    const windows = this.windows(attempts);
    // Taken with one increment, then given back when over the budget: nothing is compared for it.
    const counted = windows.add(text, 1);
    if (counted.count <= attempts.points)
      return { taken: true, attempts: counted.count, msBeforeNext: counted.msBeforeNext, shared: false };
    windows.add(text, -1);
    const spent = this.windows(failures).get(text);
    return { taken: false, failures: spent?.count ?? 0, msBeforeNext: spent?.msBeforeNext ?? 0 };
  }

  async release(attempts: CounterLimit, key: CounterKey): Promise<void> {
    const text = keyText(key);
    const windows = this.windows(attempts);
    // A window that ended meanwhile took the slot with it: giving it back would free one in the next window.
    if ((windows.get(text)?.count ?? 0) > 0) windows.add(text, -1);
  }

  async spend(failures: CounterLimit, key: CounterKey): Promise<{ failures: number; msBeforeNext: number }> {
    const counted = this.windows(failures).add(keyText(key), 1);
    return { failures: counted.count, msBeforeNext: counted.msBeforeNext };
  }

  close(): void {}
}

/**
 * Redis refused the counters' scripts (an ACL without `evalsha`, a script error): not an outage but a
 * configuration to fix. The operation was counted by this process alone, so until then each instance enforces
 * the limits on its own traffic only. Told to `onError` when it starts and then at most once a minute.
 */
export class RateLimitFallbackError extends Error {
  override readonly name = 'RateLimitFallbackError';
  /** Stable identifier for handlers and logs; the message may change. */
  readonly code = 'NETAUTH_RATE_LIMIT_FALLBACK';
}

/** How often a Redis failure that goes on is reported again. */
const REPORT_EVERY_MS = 60_000;

/**
 * How long a lock-out reservation waits for Redis at least (ms): as long as RedisStore's commands do by default.
 * Past it the client is refused, where a late request-rate count only falls back to this process's counters.
 */
const RESERVE_TIMEOUT_MS = 2_000;

/** Redis did not answer within `rateLimits.timeout` (it may be up, but slow or paused). */
class CounterTimeoutError extends StoreUnavailableError {}

function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
}

function integers(reply: unknown, length: number): number[] {
  if (!Array.isArray(reply) || reply.length !== length || reply.some((n) => typeof n !== 'number')) {
    throw new TypeError(`unexpected reply from a rate-limit script: ${JSON.stringify(reply)}`);
  }
  return reply as number[];
}

/** Shared counters in Redis, with this process's memory counters answering whenever Redis does not. */
export class RedisCounters implements Counters {
  readonly shared = true;
  /** Whether the last operation failed, whether that was told, and operations counted in memory since the last event. */
  private failing = false;
  private told = false;
  private cause: RateFallbackEvent['cause'] = 'unavailable';
  private operations = 0;
  private lastReport = 0;
  private closing = false;

  constructor(
    /** The store's shared counters, or a connection to the Redis `rateLimits.redis` names. */
    private readonly connection: Pick<SharedCounters, 'script' | 'describe'>,
    private readonly prefix: string,
    private readonly timeoutMs: number,
    private readonly local: MemoryCounters,
    private readonly events: EventHub,
    private readonly onError: (error: unknown) => void,
    /** The gateway's clock: when a failure that goes on is told again. Redis keeps the windows by its own clock. */
    private readonly now: () => number = Date.now,
  ) {}

  async chain(entries: ReadonlyArray<{ limit: CounterLimit; key: CounterKey }>): Promise<Refusal | undefined> {
    const keys = entries.map(({ limit, key }) => this.key(limit, key));
    const args = entries.flatMap(({ limit }) => [String(limit.points), String(limit.duration)]);
    return this.run(
      CHAIN,
      keys,
      args,
      (reply) => {
        const [index, ms] = integers(reply, 2) as [number, number];
        return index === 0 ? undefined : { index: index - 1, msBeforeNext: ms };
      },
      () => this.local.chain(entries),
    );
  }

  async take(limit: CounterLimit, key: CounterKey, want: number): Promise<{ taken: number; msBeforeNext: number }> {
    return this.run(
      TAKE,
      [this.key(limit, key)],
      [String(limit.points), String(limit.duration), String(want)],
      (reply) => {
        const [taken, ms] = integers(reply, 2) as [number, number];
        return { taken, msBeforeNext: ms };
      },
      () => this.local.take(limit, key),
    );
  }

  /**
   * Fails closed while Redis fails: a lock-out slot counted by this process alone would give every instance a
   * budget of its own, so the reservation answers `unavailable` (503, the client retries) until Redis answers
   * again. Since the only alternative to Redis' answer is a refused client, a reservation waits for it longer
   * than a request-rate count does (RESERVE_TIMEOUT_MS): a busy instance or a slow reply is not an outage.
   */
  async reserve(attempts: CounterLimit, failures: CounterLimit, key: CounterKey): Promise<ReserveAnswer> {
    const keys = [this.key(attempts, key), this.key(failures, key)];
    return this.run(
      RESERVE,
      keys,
      [String(attempts.points), String(attempts.duration)],
      (reply): ReserveAnswer => {
        const [taken, count, ms] = integers(reply, 3) as [number, number, number];
        if (taken === 1) return { taken: true, attempts: count, msBeforeNext: ms, shared: true };
        return { taken: false, failures: count, msBeforeNext: Math.max(ms, 0) };
      },
      async (cause) => ({ taken: false, unavailable: true, cause }),
      Math.max(this.timeoutMs, RESERVE_TIMEOUT_MS),
    );
  }

  async release(attempts: CounterLimit, key: CounterKey, shared: boolean): Promise<void> {
    if (!shared) {
      await this.local.release(attempts, key);
      return;
    }
    // A slot Redis holds goes back to Redis; if that fails it stays counted there until its window ends.
    await this.run(
      RELEASE,
      [this.key(attempts, key)],
      [],
      () => undefined,
      async () => undefined,
    );
  }

  async spend(failures: CounterLimit, key: CounterKey): Promise<{ failures: number; msBeforeNext: number }> {
    return this.run(
      SPEND,
      [this.key(failures, key)],
      [String(failures.duration)],
      (reply) => {
        const [spent, ms] = integers(reply, 2) as [number, number];
        return { failures: spent, msBeforeNext: ms };
      },
      () => this.local.spend(failures, key),
    );
  }

  close(): void {
    this.closing = true;
  }

  private key(limit: CounterLimit, key: CounterKey): string {
    return `${this.prefix}${limit.name}:${keyText(key)}`;
  }

  private async run<T>(
    script: typeof CHAIN,
    keys: string[],
    args: string[],
    parse: (reply: unknown) => T,
    fallback: (error: unknown) => Promise<T>,
    timeoutMs = this.timeoutMs,
  ): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const deadline = new Promise<never>((_, reject) => {
        const message = `Redis did not answer within ${timeoutMs} ms (rateLimits.timeout)`;
        const late = () => reject(new CounterTimeoutError(message));
        // Timers run before the event loop reads its sockets: after a busy stretch a reply that came in time is
        // still unread when the timer fires. setImmediate runs after that read, so only a reply really late loses.
        timer = setTimeout(() => setImmediate(late), timeoutMs);
      });
      const answer = parse(await Promise.race([this.connection.script(script, keys, args), deadline]));
      this.answered();
      return answer;
    } catch (error) {
      this.fellBack(error);
      return await fallback(error);
    } finally {
      clearTimeout(timer);
    }
  }

  private answered(): void {
    if (!this.failing) return;
    this.failing = false;
    // Only a failure that was told is told to be over (a short one's operations go with the next event).
    if (!this.told || this.closing) return;
    this.told = false;
    this.emit('recovered');
  }

  private fellBack(error: unknown): void {
    if (this.closing) return;
    this.operations++;
    const unavailable = error instanceof StoreUnavailableError ? 'unavailable' : 'error';
    const cause = error instanceof CounterTimeoutError ? 'timeout' : unavailable;
    this.cause = cause;
    this.failing = true;
    // Told at most once a minute, however the failures come: a hung shard fails one count while the others answer
    // the next, and a slow one fails them by either deadline (timeout, unavailable); each used to be a new failure
    // told at once (issue 47: 74-151 warn lines per process in a 20 s hang). The counts go with the next event.
    const now = this.now();
    if (this.lastReport !== 0 && now - this.lastReport < REPORT_EVERY_MS) return;
    this.lastReport = now;
    this.told = true;
    this.emit('failing');
    if (this.cause === 'error') {
      this.onError(
        new RateLimitFallbackError(
          `rate limits: Redis at ${this.connection.describe()} refused the counters' script (${reason(error)}): each instance counts for itself until that is fixed`,
          { cause: error },
        ),
      );
    }
  }

  private emit(state: RateFallbackEvent['state']): void {
    const operations = this.operations;
    this.operations = 0;
    this.events.emit('rate.fallback', { state, cause: this.cause, operations });
  }
}
