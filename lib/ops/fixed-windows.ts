import { ExpiryQueue } from '../stores/expiry-queue.js';

/** What one counter holds now: its count in the current window, and milliseconds until that window ends. */
export interface WindowCount {
  count: number;
  msBeforeNext: number;
}

interface Window {
  count: number;
  end: number;
}

/**
 * One limit's counters in this process: fixed windows with rate-limiter-flexible's meaning (a counter starts its
 * window of `duration` seconds at its first point; every point counts, a refused request's too).
 *
 * Why not rate-limiter-flexible's RateLimiterMemory: it makes a result object per call and a timer per window, and
 * the gateway counts several times per request (the lock-out's slot, a client's limit, a subscriber's). Expired
 * windows go from a min-heap of their ends on every operation, so memory holds only live windows, with no timer.
 * Cost: bench/README.md, "Memory counters answered at once".
 */
export class FixedWindows {
  private readonly windows = new Map<string, Window>();
  private readonly ends = new ExpiryQueue();
  private readonly durationMs: number;

  constructor(
    duration: number,
    private readonly now: () => number = Date.now,
  ) {
    this.durationMs = duration * 1000;
  }

  /** Adds `points` (negative: gives them back) to the key's window, starting one if none is live: the count after. */
  add(key: string, points: number): WindowCount {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(key);
    if (window === undefined || window.end <= now) {
      window = { count: 0, end: now + this.durationMs };
      this.windows.set(key, window);
      this.ends.push(window.end, key);
    }
    window.count += points;
    return { count: window.count, msBeforeNext: window.end - now };
  }

  /** The key's live window, if it has one. */
  get(key: string): WindowCount | undefined {
    const now = this.now();
    this.sweep(now);
    const window = this.windows.get(key);
    return window === undefined || window.end <= now
      ? undefined
      : { count: window.count, msBeforeNext: window.end - now };
  }

  /** Windows live now (for tests). */
  get size(): number {
    this.sweep(this.now());
    return this.windows.size;
  }

  private sweep(now: number): void {
    this.ends.drain(now, (key, end) => {
      // A key whose window ended and started again has a later end in the heap: only its current one counts.
      if (this.windows.get(key)?.end === end) this.windows.delete(key);
    });
  }
}
