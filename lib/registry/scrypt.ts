import { scrypt as scryptCallback } from 'node:crypto';
import { promisify } from 'node:util';
import { OAuthError } from '../errors.js';
import { SCRYPT_DEFAULTS } from '../defaults.js';

/**
 * scrypt for client secrets, process-wide: the thread pool it runs on is shared with WebCrypto (every JWT the
 * gateway verifies), so a flood of secret checks must not take it over. At most `concurrency` derivations run at
 * once, `queue` more wait, and past that a check is refused with 503 temporarily_unavailable and Retry-After.
 * Unknown client ids never reach it: their decoy is a timer whose duration is drawn from the durations of
 * real verifications, so an unknown id answers like an scrypt-registered one at no CPU cost.
 *
 * The queue is not first come, first served (issue 42, finding 2): each check has a rank (`SecretHistory.rank`:
 * recent wrong secrets from its address, for its client id), lower ranks take the next turn, and a check arriving
 * at a full queue takes the place of the highest-ranked waiter if that one ranks higher than it (that waiter gets
 * the 503). So guesses from addresses that have failed cannot keep a client's own requests out.
 */

export type Derive = (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

/** node:crypto's scrypt (N = 16384, r = 8, p = 1), on the thread pool. */
export const deriveScrypt = promisify(scryptCallback) as Derive;

export interface ScryptLimits {
  /** Derivations at once. Default 2: half of libuv's default pool of 4, the rest stays for WebCrypto. */
  concurrency?: number;
  /** Derivations waiting for a turn; beyond it, 503. Default 32 (about 0.7 s of waiting at most). */
  queue?: number;
  /** The derivation itself (tests count or hold it). Default node:crypto's scrypt. */
  derive?: Derive;
}

/** Recent real verification times kept for the decoy to draw from. */
const SAMPLES = 32;

/** A check waiting for its turn. */
interface Waiter {
  rank: number;
  /** Arrival order, among equal ranks. */
  seq: number;
  turn: () => void;
  refuse: (error: OAuthError) => void;
}

export class ScryptLimiter {
  /** Derivations started (real checks and the one calibration), for metrics and tests. */
  computed = 0;
  /** Checks refused because the queue was full (real and decoy). */
  refused = 0;
  private running = 0;
  private readonly waiting: Waiter[] = [];
  private arrivals = 0;
  private concurrency: number = SCRYPT_DEFAULTS.concurrency;
  private queueLength: number = SCRYPT_DEFAULTS.queue;
  private derive: Derive = deriveScrypt;
  /** Milliseconds, from a check's arrival to its result, queue wait included: what a client observes. */
  private readonly samples: number[] = [];
  private calibration: Promise<void> | undefined;

  constructor(limits: ScryptLimits = {}) {
    this.configure(limits);
  }

  configure(limits: ScryptLimits): void {
    const { concurrency = this.concurrency, queue = this.queueLength, derive = this.derive } = limits;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new TypeError('scrypt concurrency must be an integer of at least 1');
    }
    if (!Number.isInteger(queue) || queue < 0) throw new TypeError('scrypt queue must be a non-negative integer');
    this.concurrency = concurrency;
    this.queueLength = queue;
    this.derive = derive;
  }

  /** Checks waiting for a turn. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Whether every turn is taken and every place in the queue too. */
  private full(): boolean {
    return this.running >= this.concurrency && this.waiting.length >= this.queueLength;
  }

  /** The waiter a check of `rank` arriving at a full queue displaces: the highest-ranked, latest, if above `rank`. */
  private displaceable(rank: number): number | undefined {
    let found: number | undefined;
    this.waiting.forEach((waiter, i) => {
      const worst = found === undefined ? undefined : this.waiting[found]!;
      if (waiter.rank > rank && (worst === undefined || waiter.rank >= worst.rank)) found = i;
    });
    return found;
  }

  /** The waiter whose turn is next: the lowest rank, the earliest among equals. */
  private next(): Waiter | undefined {
    let best = -1;
    this.waiting.forEach((waiter, i) => {
      const current = this.waiting[best];
      if (
        current === undefined ||
        waiter.rank < current.rank ||
        (waiter.rank === current.rank && waiter.seq < current.seq)
      )
        best = i;
    });
    return best < 0 ? undefined : this.waiting.splice(best, 1)[0];
  }

  private busy(): OAuthError {
    this.refused++;
    const description = 'too many client secret checks at once; retry shortly';
    return new OAuthError('temporarily_unavailable', description, { headers: { 'Retry-After': '1' } });
  }

  /**
   * One derivation, in turn (`rank`: lower goes first, see the class); rejects with 503 temporarily_unavailable when
   * the queue is full of checks that rank no higher, or when a lower-ranked check takes its place in the queue.
   */
  async scrypt(password: string, salt: Buffer, keylen: number, rank = 0): Promise<Buffer> {
    if (this.full()) {
      const displaced = this.displaceable(rank);
      if (displaced === undefined) throw this.busy();
      this.waiting.splice(displaced, 1)[0]!.refuse(this.busy());
    }
    const arrived = performance.now();
    if (this.running < this.concurrency) this.running++;
    else {
      const seq = this.arrivals++;
      await new Promise<void>((turn, refuse) => this.waiting.push({ rank, seq, turn, refuse }));
    }
    try {
      this.computed++;
      const key = await this.derive(password, salt, keylen);
      this.sample(performance.now() - arrived);
      return key;
    } finally {
      // The turn passes straight to the next waiter, so `running` never drops below what is really running.
      const next = this.next();
      if (next) next.turn();
      else this.running--;
    }
  }

  private sample(ms: number): void {
    if (this.samples.length >= SAMPLES) this.samples.splice(Math.floor(Math.random() * SAMPLES), 1);
    this.samples.push(ms);
  }

  /**
   * The decoy of an unknown client id: as long as a real check would take (a duration drawn from recent real
   * ones, the first measured once on a real derivation), on a timer. Refused as a real check of the same `rank`
   * would be when the queue is full, so a 503 tells no registered id from an unknown one either.
   */
  async decoy(rank = 0): Promise<void> {
    if (this.full() && this.displaceable(rank) === undefined) throw this.busy();
    if (this.samples.length === 0) {
      this.calibration ??= this.calibrate();
      await this.calibration;
    }
    const ms = this.samples[Math.floor(Math.random() * this.samples.length)] ?? 0;
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  private async calibrate(): Promise<void> {
    // The parameters of hashClientSecret: a 16-byte salt, a 32-byte key.
    // Ranked last: real checks go first.
    await this.scrypt('calibration', Buffer.alloc(16), 32, Number.MAX_SAFE_INTEGER).catch(() => undefined);
    this.calibration = undefined;
  }
}

/** The process's limiter: one thread pool, one limit, whatever the number of routers. */
export const scryptLimiter = new ScryptLimiter();
