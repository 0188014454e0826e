import type { Store } from '../../stores/store.js';
import { ExpiryQueue } from '../../stores/expiry-queue.js';

/** What the store keeps (kind `revoked`) for a revoked JWT id or grant id. */
interface RevokedRecord {
  /** Epoch ms until which the entry matters (the longest a token it covers can still be valid). */
  until: number;
  [key: string]: number;
}

const jtiKey = (jti: string): string => `jti:${jti}`;
const grantKey = (grantId: string): string => `grant:${grantId}`;

/**
 * The revocation list that lets JWT access tokens be verified offline and still be revocable.
 *
 * Every revocation path records here: RFC 7009 revocation (the token's `jti`), consent revocation or
 * refusal (the consent's grant id), and an authorization-code replay (the code's grant id). Each entry is
 * kept in two places:
 * - a process-local set with expiry, read by the guard with no I/O; an entry lives as long as a token it
 *   covers can be valid, so the set stays small (revocations of one access-token lifetime);
 * - the store (record kind `revoked`), so other instances sharing the store can see it:
 *   `guard({ revocation: 'store' })` consults it on every request.
 *
 * Store records written under a revoked grant (opaque tokens, JWT records, codes, requests) are also
 * deleted with `store.revokeGrant`, exactly as before; opaque tokens need nothing more.
 */
export class Revocations {
  private readonly local = new Map<string, number>();
  private readonly queue = new ExpiryQueue();

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    /** Seconds a revoked grant is remembered: the access-token lifetime (every token of it expires by then). */
    private readonly grantRetention: number,
  ) {}

  /** Revokes one JWT access token until it would have expired anyway. */
  async revokeToken(jti: string, expiresAt: number): Promise<void> {
    await this.record(jtiKey(jti), expiresAt);
  }

  /**
   * Revokes every token issued under these grants, and deletes every record written with them.
   *
   * The list entry is written BEFORE the records are deleted. A token being issued under the grant at the same
   * moment (its consent read as live just before) re-checks the list once its record is written
   * (`issueAccessToken`): either it finds the entry, or its record was written before this revocation began,
   * and `store.revokeGrant` then deletes it. Either way the token never works. Both steps are attempted even
   * if the first fails (the local entry is already in place), so a failing list write does not leave opaque
   * tokens alive; the first failure is raised.
   */
  async revokeGrants(grantIds: readonly string[]): Promise<void> {
    const until = this.now() + this.grantRetention * 1000;
    for (const grantId of grantIds) {
      let failure: { reason: unknown } | undefined;
      const attempt = (step: Promise<void>) =>
        step.catch((reason: unknown) => {
          failure ??= { reason };
        });
      await attempt(this.record(grantKey(grantId), until));
      await attempt(this.store.revokeGrant(grantId));
      if (failure) throw failure.reason;
    }
  }

  /** Whether any of these grants was revoked, by this process or by any instance sharing the store. */
  async isAnyGrantRevoked(grantIds: readonly string[]): Promise<boolean> {
    this.sweep();
    if (grantIds.some((g) => this.local.has(grantKey(g)))) return true;
    return this.foundInStore(grantIds.map(grantKey));
  }

  /** Whether this process has seen the token or one of its grants revoked. No I/O. */
  isRevokedLocally(jti: string, grantIds: readonly string[]): boolean {
    this.sweep();
    // Nearly always empty: no key to build on the guard's path then.
    if (this.local.size === 0) return false;
    if (this.local.has(jtiKey(jti))) return true;
    return grantIds.some((g) => this.local.has(grantKey(g)));
  }

  /** Whether any instance sharing the store revoked the token or one of its grants. Learns what it finds. */
  isRevokedInStore(jti: string, grantIds: readonly string[]): Promise<boolean> {
    return this.foundInStore([jtiKey(jti), ...grantIds.map(grantKey)]);
  }

  private async foundInStore(keys: readonly string[]): Promise<boolean> {
    const found = await Promise.all(keys.map((key) => this.store.get<RevokedRecord>('revoked', key)));
    let revoked = false;
    found.forEach((entry, i) => {
      if (entry && entry.value.until > this.now()) {
        this.remember(keys[i]!, entry.value.until);
        revoked = true;
      }
    });
    return revoked;
  }

  /** Local first, so the instance that revoked sees it at once even if the store write then fails. */
  private async record(key: string, until: number): Promise<void> {
    const ttl = Math.ceil((until - this.now()) / 1000);
    if (ttl <= 0) return;
    this.remember(key, until);
    await this.store.put('revoked', key, { until }, { ttl });
  }

  private remember(key: string, until: number): void {
    this.sweep();
    const previous = this.local.get(key);
    if (previous !== undefined && previous >= until) return;
    this.local.set(key, until);
    this.queue.push(until, key);
  }

  private sweep(): void {
    this.queue.drain(this.now(), (key, until) => {
      // The heap keeps stale times of extended entries; only the current one counts.
      if (this.local.get(key) === until) this.local.delete(key);
    });
  }
}
