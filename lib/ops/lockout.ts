import { keyText, type CounterKey, type CounterLimit, type Counters, type ReserveAnswer } from './counters.js';

/**
 * A failure slot held while one set of client credentials is checked. Exactly one of the two is called.
 */
export interface AttemptSlot {
  /** The credentials held (or the check could not run): the slot goes back (or is kept for the next check), successes never count. */
  release(): void;
  /** The credentials were refused: the slot stays spent for the window. */
  spend(): Promise<void>;
}

/**
 * A slot to check the credentials with, or the seconds to wait before asking again: answered 429, or 503 when
 * the shared counters cannot be reached (`unavailable`: nothing is known about the key, the service is down).
 */
export type Reservation = { slot: AttemptSlot } | { retryAfter: number; unavailable?: true; cause?: unknown };

/** A failure budget's counters never fail a request: a broken counter is reported and lets it through. */
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
    // Bounded: past MAX_LOCKS the oldest lock goes, one at a time (the counters still hold the truth: its next
    // check costs one round trip). A Map keeps insertion order, so its first key is the oldest.
    this.until.delete(key);
    if (this.until.size >= MAX_LOCKS) {
      const oldest = this.until.keys().next();
      if (!oldest.done) this.until.delete(oldest.value);
    }
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

/**
 * Where a slot came from: Redis (`shared`) or this process; whether it may be held after a success (taken while
 * the attempts were at most half the budget); and when the window it is counted in ends (ms).
 */
interface SlotOrigin {
  shared: boolean;
  holdable: boolean;
  windowEnd: number;
}

/** A slot this instance keeps after a success, for the next check of the same key. */
interface HeldSlot {
  counterKey: CounterKey;
  /** Where it is counted: Redis, or this process (a slot taken while Redis failed goes back there, not to Redis). */
  shared: boolean;
  windowEnd: number;
  /** When it goes back if no check of the key has taken it (ms). */
  until: number;
}

/** A slot that counts nothing: no budget applies, or the counters failed. */
export const NO_SLOT: AttemptSlot = { release: () => {}, spend: async () => {} };

/** How long a slot is held after a success for the next check of the key, at most. */
export const HOLD_MS = 10_000;
/** A held slot (or points taken ahead) is used, or given back, only this long before its window ends: Redis' clock and ours, and the trip there, may differ. */
export const WINDOW_MARGIN_MS = 1_000;
/** Keys with a held slot, at most (past this, slots go straight back). */
const MAX_HELD = 10_000;
/** Keys this process knows to be locked, at most (past this, the oldest lock is forgotten first). */
export const MAX_LOCKS = 10_000;

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
 *
 * A success does not give its slot back at once: this instance holds it, still counted as a check in flight,
 * for the next check of the same key (up to HOLD_MS, never past the slot's window), and gives it back after
 * that. So a client that has not failed pays next to nothing for the lock-out: its checks reuse the slot, with no
 * Redis round trip (shared counters) and no counter work (memory counters). Every comparison still holds a slot counted in Redis, so the budget bounds them
 * across instances as before. Only a slot taken while the attempts were at most half the budget is held, so
 * held slots (one per instance and key) never take more than half of it: the other half stays for checks in
 * flight on instances without one.
 */
export class FailureBudget {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly locks = new LocalLocks();
  /** Held slots by key; each goes back at the first sweep after its `until` unless a check of its key takes it first. */
  private readonly held = new Map<string, HeldSlot>();
  /**
   * One timer for every held slot, not one per slot: a client that authenticates all the time takes and holds a
   * slot on every request, and a timer made and cleared per request cost more than the counting it saves.
   */
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly counters: Counters,
    private readonly attempts: CounterLimit,
    private readonly failures: CounterLimit,
    private readonly guarded: Guarded,
    /** How long a slot is held after a success (0: given back at once). */
    private readonly holdMs = HOLD_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get budget(): number {
    return this.attempts.points;
  }

  /** A slot, or the seconds to wait (after waiting for a check in flight here to end, when one is). */
  async reserve(counterKey: CounterKey): Promise<Reservation> {
    const key = keyText(counterKey);
    const now = this.now();
    const locked = this.locks.lockedFor(key, now);
    if (locked !== undefined) return { retryAfter: seconds(locked) };
    const kept = this.takeHeld(key, now);
    if (kept) return { slot: this.slot(key, counterKey, kept) };
    // A check of this key ending while the reservation is refused may free a slot: looking again misses no wake-up.
    const watched = this.inFlight.get(key);
    const settledBefore = watched?.settled;
    const answer = await this.guarded(() => this.counters.reserve(this.attempts, this.failures, counterKey));
    return this.decide(key, counterKey, answer, watched, settledBefore);
  }

  /** What the counters answered: a slot, a wait for a check in flight here, or the seconds to wait. */
  private async decide(
    key: string,
    counterKey: CounterKey,
    answer: ReserveAnswer | undefined,
    watched: InFlight | undefined,
    settledBefore: number | undefined,
  ): Promise<Reservation> {
    // A counter that failed lets the check run, uncounted (reported through `guarded`).
    if (answer === undefined) return { slot: NO_SLOT };
    if ('unavailable' in answer) return { retryAfter: 1, unavailable: true, cause: answer.cause };
    if (answer.taken) {
      const holdable = this.holdMs > 0 && 2 * answer.attempts <= this.budget;
      return {
        slot: this.slot(key, counterKey, {
          shared: answer.shared,
          holdable,
          windowEnd: this.now() + answer.msBeforeNext,
        }),
      };
    }
    if (watched !== undefined && watched.settled !== settledBefore) return this.reserve(counterKey);
    const local = this.inFlight.get(key);
    if (local !== undefined) {
      await new Promise<void>((resolve) => local.waiters.push(resolve));
      return this.reserve(counterKey);
    }
    if (answer.failures >= this.budget) {
      this.locks.lock(key, this.now() + answer.msBeforeNext);
      return { retryAfter: seconds(answer.msBeforeNext) };
    }
    return { retryAfter: 1 };
  }

  /** Gives back every held slot (the gateway closes). */
  async close(): Promise<void> {
    const held = [...this.held.values()];
    this.held.clear();
    if (this.sweeper !== undefined) clearTimeout(this.sweeper);
    this.sweeper = undefined;
    await this.giveBack(held, this.now());
  }

  /**
   * Gives back the held slots whose time is up; the sweeper calls it once per `holdMs` while slots are held. It looks
   * at every held slot (at most MAX_HELD): a slot held near its window's end is due before ones held earlier.
   */
  giveBackIdle(now: number): Promise<void> {
    const due: HeldSlot[] = [];
    for (const [key, slot] of this.held) {
      if (slot.until > now) continue;
      this.held.delete(key);
      due.push(slot);
    }
    return this.giveBack(due, now);
  }

  /** Gives slots back where they were counted, while their window lasts (at its end Redis drops them by itself). */
  private async giveBack(slots: readonly HeldSlot[], now: number): Promise<void> {
    await Promise.all(
      slots
        .filter((slot) => now < slot.windowEnd - WINDOW_MARGIN_MS)
        .map((slot) => this.guarded(() => this.counters.release(this.attempts, slot.counterKey, slot.shared))),
    );
  }

  /** The slot held for `key`, if one is and its window has time left. */
  private takeHeld(key: string, now: number): SlotOrigin | undefined {
    const held = this.held.get(key);
    if (held === undefined) return undefined;
    this.held.delete(key);
    // Too close to the end of its window: Redis is about to drop it (and this check may start the next window).
    return now < held.windowEnd - WINDOW_MARGIN_MS
      ? { shared: held.shared, holdable: true, windowEnd: held.windowEnd }
      : undefined;
  }

  /** Keeps a slot for the next check of `key`, when it is worth it. */
  private hold(key: string, counterKey: CounterKey, origin: SlotOrigin): boolean {
    const now = this.now();
    const left = origin.windowEnd - WINDOW_MARGIN_MS - now;
    if (!origin.holdable || left <= 0 || this.held.has(key) || this.held.size >= MAX_HELD) return false;
    this.held.set(key, {
      counterKey,
      shared: origin.shared,
      windowEnd: origin.windowEnd,
      until: now + Math.min(this.holdMs, left),
    });
    this.armSweeper();
    return true;
  }

  /** Runs `giveBackIdle` every `holdMs` while any slot is held; the timer never keeps the process alive. */
  private armSweeper(): void {
    if (this.sweeper !== undefined) return;
    this.sweeper = setTimeout(() => {
      this.sweeper = undefined;
      void this.giveBackIdle(this.now()).finally(() => {
        if (this.held.size > 0) this.armSweeper();
      });
    }, this.holdMs);
    this.sweeper.unref();
  }

  private slot(key: string, counterKey: CounterKey, origin: SlotOrigin): AttemptSlot {
    let local = this.inFlight.get(key);
    if (local === undefined) {
      local = { count: 0, settled: 0, waiters: [] };
      this.inFlight.set(key, local);
    }
    const entry = local;
    entry.count++;
    let settled = false;
    // One waiter per slot given back; all of them once nothing is in flight (or the key locked): they look again.
    const settle = (wakeAll: boolean): void => {
      entry.settled++;
      entry.count--;
      if (entry.count === 0 && this.inFlight.get(key) === entry) this.inFlight.delete(key);
      if (wakeAll || entry.count === 0) for (const wake of entry.waiters.splice(0)) wake();
      else entry.waiters.shift()?.();
    };
    return {
      release: () => {
        if (settled) return;
        settled = true;
        // Held: the next check of this key (a waiter woken now, or a later request) takes it with no I/O.
        if (this.hold(key, counterKey, origin)) {
          settle(false);
          return;
        }
        const released = this.guarded(() => this.counters.release(this.attempts, counterKey, origin.shared));
        void released.then(() => settle(false));
      },
      spend: async () => {
        if (settled) return;
        settled = true;
        const spent = await this.guarded(() => this.counters.spend(this.failures, counterKey));
        const locked = spent !== undefined && spent.failures >= this.budget;
        if (locked) this.locks.lock(key, this.now() + spent.msBeforeNext);
        settle(locked);
      },
    };
  }
}
