import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/**
 * A failure slot held while one set of client credentials is checked. Exactly one of the two is called.
 */
export interface AttemptSlot {
  /** The credentials held (or the check could not run): the slot goes back, successes never count. */
  release(): void;
  /** The credentials were refused: the slot stays spent for the window. */
  spend(): Promise<void>;
}

/** A slot to check the credentials with, or the seconds to wait before asking again (answered 429). */
export type Reservation = { slot: AttemptSlot } | { retryAfter: number };

/** A failure budget's counters need the backend open and never fail a request: a broken counter lets it through. */
export type Guarded = <T>(operation: () => Promise<T>) => Promise<T | undefined>;

/** Seconds to wait, whole and at least 1. */
export function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

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

/** This process's checks in flight on one key, and the requests waiting for one of them to end. */
interface InFlight {
  count: number;
  /** How many of them have ended so far. */
  settled: number;
  waiters: Array<() => void>;
}

const NO_SLOT: AttemptSlot = { release: () => {}, spend: async () => {} };

/**
 * The brute-force budget of one kind of key (a registered client id at one address, or one address naming
 * unknown ids): at most `budget` credentials refused per window, then the key is locked until the window passes.
 *
 * A slot is reserved BEFORE the credentials are compared, so concurrent guesses can never get more comparisons
 * than the budget (the counter was read while the secret was checked, so 500 parallel guesses all passed it).
 * Two counters per key:
 * - `attempts`: refused checks plus checks in flight. A reservation takes a point atomically (one Lua script
 *   with Redis); a success gives it back; a refusal keeps it. Past the budget, nothing is compared.
 * - `failures`: refused checks only. It tells a locked key (the budget spent on failures) from a busy one (a
 *   burst of the client's own checks in flight), and sets the local lock that answers with no I/O at all.
 * A reservation refused while this process has checks in flight on the key waits for one to end (a client's
 * burst of correct requests is served, `budget` at a time); refused with none here, it answers 429: with the
 * window's remainder when the key is locked, else (checks in flight on other instances) `Retry-After: 1`.
 */
export class FailureBudget {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly locks = new LocalLocks();

  constructor(
    private readonly attempts: RateLimiterAbstract,
    private readonly failures: RateLimiterAbstract,
    readonly budget: number,
    private readonly guarded: Guarded,
  ) {}

  async reserve(key: string): Promise<Reservation> {
    for (;;) {
      const locked = this.locks.lockedFor(key, Date.now());
      if (locked !== undefined) return { retryAfter: seconds(locked) };
      // A check of this key ending while the reservation is refused may free a slot: looking again misses no wake-up.
      const watched = this.inFlight.get(key);
      const settledBefore = watched?.settled;
      const taken = await this.guarded(() =>
        this.attempts.consume(key).then(
          () => true,
          (rejection: unknown) => {
            if (rejection instanceof RateLimiterRes) return false;
            throw rejection;
          },
        ),
      );
      // A counter that failed lets the check run, uncounted (reported through `guarded`).
      if (taken === undefined) return { slot: NO_SLOT };
      if (taken) return { slot: this.slot(key) };
      // Over the budget: this request compares nothing, so its point goes back.
      await this.guarded(() => this.attempts.reward(key));
      if (watched !== undefined && watched.settled !== settledBefore) continue;
      const local = this.inFlight.get(key);
      if (local !== undefined) {
        await new Promise<void>((resolve) => local.waiters.push(resolve));
        continue;
      }
      const spent = await this.guarded(() => this.failures.get(key));
      if (spent && spent.consumedPoints >= this.budget) {
        this.locks.lock(key, Date.now() + spent.msBeforeNext);
        return { retryAfter: seconds(spent.msBeforeNext) };
      }
      return { retryAfter: 1 };
    }
  }

  private slot(key: string): AttemptSlot {
    let local = this.inFlight.get(key);
    if (local === undefined) this.inFlight.set(key, (local = { count: 0, settled: 0, waiters: [] }));
    const entry = local;
    entry.count++;
    let settled = false;
    // One waiter per slot given back; all of them once nothing is in flight (or the key locked): they look again.
    const settle = (wakeAll: boolean): void => {
      entry.settled++;
      entry.count--;
      if (entry.count === 0 && this.inFlight.get(key) === entry) this.inFlight.delete(key);
      if (wakeAll || entry.count === 0) entry.waiters.splice(0).forEach((wake) => wake());
      else entry.waiters.shift()?.();
    };
    return {
      release: () => {
        if (settled) return;
        settled = true;
        void this.guarded(() => this.attempts.reward(key)).then(() => settle(false));
      },
      spend: async () => {
        if (settled) return;
        settled = true;
        const spent = await this.guarded(() =>
          this.failures.consume(key).catch((rejection: unknown) => {
            if (rejection instanceof RateLimiterRes) return rejection;
            throw rejection;
          }),
        );
        const locked = spent !== undefined && spent.consumedPoints >= this.budget;
        if (locked) this.locks.lock(key, Date.now() + spent.msBeforeNext);
        settle(locked);
      },
    };
  }
}
