import { createHash } from 'node:crypto';
import session from 'express-session';
import type { JsonObject, Store } from './store.js';

/**
 * express-session's Store over the package's own Store contract (kind `session`), so the consent page's
 * sessions live wherever codes and tokens live: in memory, or in Redis for a fleet, with nothing more to set up.
 * Records are keyed by a hash of the session id, so a leaked store reveals no usable session cookie.
 */
export class ContractSessionStore extends session.Store {
  constructor(
    private readonly store: Store,
    /** Seconds a session is kept after its last write. */
    private readonly ttl: number,
  ) {
    super();
  }

  private key(sid: string): string {
    return createHash('sha256').update(sid).digest('base64url');
  }

  override get(sid: string, callback: (err: unknown, session?: session.SessionData | null) => void): void {
    this.store
      .get('session', this.key(sid))
      .then((stored) => {
        // A copy: express-session changes the session it is given, and a store may hand out frozen values.
        callback(null, stored ? (structuredClone(stored.value) as unknown as session.SessionData) : null);
      })
      .catch((error: unknown) => callback(error));
  }

  override set(sid: string, data: session.SessionData, callback?: (err?: unknown) => void): void {
    // JSON round trip: the cookie's Date becomes a string, which express-session turns back into a Date on load.
    const value = JSON.parse(JSON.stringify(data)) as JsonObject;
    this.store
      .put('session', this.key(sid), value, { ttl: this.ttl })
      .then(() => callback?.())
      .catch((error: unknown) => callback?.(error));
  }

  override destroy(sid: string, callback?: (err?: unknown) => void): void {
    this.store
      .delete('session', this.key(sid))
      .then(() => callback?.())
      .catch((error: unknown) => callback?.(error));
  }

  override touch(sid: string, data: session.SessionData, callback?: () => void): void {
    this.set(sid, data, () => callback?.());
  }
}
