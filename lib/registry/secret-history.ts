import { createHmac, randomBytes } from 'node:crypto';

/**
 * What this process remembers of recent client-secret checks, so that a flood of wrong secrets cannot take the
 * scrypt limit from the client it names (issue 42, finding 2):
 * - secrets that verified recently: a keyed digest (HMAC-SHA-256 under a random key that never leaves this process)
 *   of the client id, the registered hash and the presented secret. A client presenting such a secret again is
 *   answered without a derivation, so it is never queued behind guesses. Only the right secret finds an entry: the
 *   shortcut tells nothing to whoever does not hold it. A changed registration (a new hash) finds none.
 * - where wrong secrets came from lately: per source address (its counting key) and per client id. A check's
 *   rank in the scrypt queue is what they say of it, so guesses from addresses that have failed go last and are
 *   the first to be refused when the queue is full.
 * Both are bounded (the oldest entry goes first) and forget after `ttlMs`; nothing here is a secret in the clear.
 */

/** How long a verified secret, or a failure, is remembered. The lock-out's default window (900 s). */
const TTL_MS = 900_000;
/** Entries per kind, at most. */
const MAX_ENTRIES = 10_000;

/** An expiring, bounded set of keys: insertion order is age order, so the first key is the oldest. */
class Recent {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
  ) {}

  has(key: string, now: number): boolean {
    const until = this.until.get(key);
    if (until === undefined) return false;
    if (until > now) return true;
    this.until.delete(key);
    return false;
  }

  add(key: string, now: number): void {
    this.until.delete(key);
    if (this.until.size >= this.max) {
      const oldest = this.until.keys().next();
      if (!oldest.done) this.until.delete(oldest.value);
    }
    this.until.set(key, now + this.ttlMs);
  }
}

/** The queue rank of a check with nothing against it; higher ranks wait longer and are refused first. */
export const CLEAN_RANK = 0;

export class SecretHistory {
  private readonly key = randomBytes(32);
  private readonly verified: Recent;
  private readonly failedAddresses: Recent;
  private readonly failedClients: Recent;

  constructor(
    private readonly now: () => number = Date.now,
    ttlMs = TTL_MS,
    max = MAX_ENTRIES,
  ) {
    this.verified = new Recent(ttlMs, max);
    this.failedAddresses = new Recent(ttlMs, max);
    this.failedClients = new Recent(ttlMs, max);
  }

  /** The keyed digest of a (client, registered hash, presented secret) triple: the secret never stays in memory. */
  private digest(clientId: string, registered: string, presented: string): string {
    return createHmac('sha256', this.key)
      .update(`${clientId.length}:${clientId}${registered.length}:${registered}`)
      .update(presented)
      .digest('base64url');
  }

  /** Whether `presented` verified against this registration (`registered`: its hash) lately. */
  verifiedRecently(clientId: string, registered: string, presented: string): boolean {
    return this.verified.has(this.digest(clientId, registered, presented), this.now());
  }

  rememberVerified(clientId: string, registered: string, presented: string): void {
    this.verified.add(this.digest(clientId, registered, presented), this.now());
  }

  /** A wrong secret for `clientId` (registered or not) from `address` (its counting key). */
  rememberFailure(clientId: string, address: string): void {
    const now = this.now();
    this.failedAddresses.add(address, now);
    this.failedClients.add(clientId, now);
  }

  /**
   * A check's rank: 0 with nothing against it, +1 when its client id had wrong secrets lately (from anywhere), +2
   * when its address sent wrong secrets lately (for any id). The address weighs more: a client's own requests come
   * from addresses that have not failed, however many guesses name its id.
   */
  rank(clientId: string, address: string): number {
    const now = this.now();
    return (this.failedClients.has(clientId, now) ? 1 : 0) + (this.failedAddresses.has(address, now) ? 2 : 0);
  }
}

/** The process's history, beside the process's scrypt limit. */
export const secretHistory = new SecretHistory();
