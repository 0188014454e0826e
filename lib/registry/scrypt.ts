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

export class ScryptLimiter {
  /** Derivations started (real checks and the one calibration), for metrics and tests. */
  computed = 0;
  /** Checks refused because the queue was full (real and decoy). */
  refused = 0;
  private running = 0;
  private waiting: (() => void)[] = [];
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

  /** Whether a check arriving now would be refused. */
  private full(): boolean {
    return this.running >= this.concurrency && this.waiting.length >= this.queueLength;
  }

  private busy(): OAuthError {
    this.refused++;
    const description = 'too many client secret checks at once; retry shortly';
    return new OAuthError('temporarily_unavailable', description, { headers: { 'Retry-After': '1' } });
  }

  /** One derivation, in turn; rejects with 503 temporarily_unavailable when the queue is full. */
  async scrypt(password: string, salt: Buffer, keylen: number): Promise<Buffer> {
    if (this.full()) throw this.busy();
    const arrived = performance.now();
    if (this.running < this.concurrency) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      this.computed++;
      const key = await this.derive(password, salt, keylen);
      this.sample(performance.now() - arrived);
      return key;
    } finally {
      // The turn passes straight to the next waiter, so `running` never drops below what is really running.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  private sample(ms: number): void {
    if (this.samples.length >= SAMPLES) this.samples.splice(Math.floor(Math.random() * SAMPLES), 1);
    this.samples.push(ms);
  }

  /**
   * The decoy of an unknown client id: as long as a real check would take (a duration drawn from recent real
   * ones, the first measured once on a real derivation), on a timer. Refused as a real check would be when the
   * queue is full, so a 503 tells no registered id from an unknown one either.
   */
  async decoy(): Promise<void> {
    if (this.full()) throw this.busy();
    if (this.samples.length === 0) {
      this.calibration ??= this.calibrate();
      await this.calibration;
    }
    const ms = this.samples[Math.floor(Math.random() * this.samples.length)] ?? 0;
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  private async calibrate(): Promise<void> {
    // The parameters of hashClientSecret: a 16-byte salt, a 32-byte key.
    await this.scrypt('calibration', Buffer.alloc(16), 32).catch(() => undefined);
    this.calibration = undefined;
  }
}

/** The process's limiter: one thread pool, one limit, whatever the number of routers. */
export const scryptLimiter = new ScryptLimiter();
