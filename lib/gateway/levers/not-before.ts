import { OAuthError } from '../../errors.js';
import type { Store } from '../../stores/store.js';

/** Whose grants a marker ends: one subscriber's (every client), or one client's (every subscriber). */
export type MarkerScope = 'subscriber' | 'client';

/** What a presented token or request says about itself, for the markers: whose it is and when it began. */
export interface Authorized {
  clientId: string;
  /** Null or undefined for a two-legged token (client credentials): only the client's marker applies. */
  subscriberId: string | null | undefined;
  /** Epoch ms when its authorization began (`StoredAuthorization.authorizedAt`); 0 when not recorded. */
  authorizedAt: number;
}

/** What the store keeps (kind `not_before`) per revoked subscriber or client. */
interface MarkerRecord {
  /** Epoch ms: whatever began before it is refused. */
  notBefore: number;
  [key: string]: number;
}

interface Known {
  notBefore: number;
  /** Epoch ms when this process last read it from the store (or wrote it). */
  readAt: number;
}

/** How many subscribers' and clients' markers (or their absence) one gateway remembers. */
export const MARKERS_KEPT = 10_000;

/**
 * Seconds a marker read from the store is trusted by a guard with `revocation: 'local'`: the longest another
 * instance's guard goes on accepting a revoked subscriber's or client's tokens (docs/operations.md).
 */
export const MARKER_REFRESH_SECONDS = 5;

const keyOf = (scope: MarkerScope, id: string): string => `${scope}:${id}`;

/** `authorizedAt` as a record or a token carries it: 0 (before any marker) when a record of an earlier version lacks it. */
export function authorizedAtOf(record: { authorizedAt?: unknown }): number {
  return typeof record.authorizedAt === 'number' && Number.isFinite(record.authorizedAt) ? record.authorizedAt : 0;
}

/**
 * The operator's levers in the store: one not-before marker per revoked subscriber and per revoked client, the time
 * of the revocation, on the gateway's clock (`now`). Whatever began before it (a token, refresh token, code,
 * auth_req_id or consent interaction whose authorization's `authorizedAt` is earlier) is refused where it is used:
 * the guard, introspection, the refresh, code and CIBA grants, the consent page. So a revocation is one write
 * (O(1), whatever the subscriber holds), issuing costs nothing more, and what the store keeps per subscriber or
 * client is one record that expires once nothing it covers can be presented (`retention`).
 *
 * A token issued while the revocation runs carries its authorization's start, not its issue time: one that began
 * before the marker is refused however late it is issued, so the race with the write cannot leave it working.
 */
export class NotBeforeMarkers {
  private readonly known = new Map<string, Known>();

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    /** Seconds a marker is kept: the longest anything granted before it can still be presented. */
    private readonly retention: number,
    private readonly refresh = MARKER_REFRESH_SECONDS,
    private readonly limit = MARKERS_KEPT,
  ) {}

  /**
   * Refuses from now on whatever the subscriber or client was granted so far. Known to this process first, so the
   * instance that revoked refuses at once even if the write then fails (the failure is raised). Answers the marker.
   */
  async mark(scope: MarkerScope, id: string): Promise<number> {
    const notBefore = this.now();
    const key = keyOf(scope, id);
    this.learn(key, notBefore, notBefore);
    await this.store.put('not_before', key, { notBefore }, { ttl: this.retention });
    return notBefore;
  }

  /** Whether a revocation covers it, read from the store now: the subscriber's and the client's markers, in parallel. */
  async refuses(authorized: Authorized): Promise<boolean> {
    const keys = this.keysOf(authorized);
    const found = await Promise.all(keys.map((key) => this.store.get<MarkerRecord>('not_before', key)));
    const now = this.now();
    let refused = false;
    keys.forEach((key, i) => {
      const stored = found[i]?.value.notBefore;
      const notBefore = this.learn(key, typeof stored === 'number' ? stored : 0, now);
      if (authorized.authorizedAt < notBefore) refused = true;
    });
    return refused;
  }

  /**
   * The same answer from what this process read in the last `refresh` seconds, with no I/O; undefined when a marker
   * must be read again (then `refuses`).
   */
  refusesFromMemory(authorized: Authorized): boolean | undefined {
    const now = this.now();
    let refused = false;
    for (const key of this.keysOf(authorized)) {
      const known = this.known.get(key);
      if (known === undefined || now - known.readAt >= this.refresh * 1000) return undefined;
      if (authorized.authorizedAt < known.notBefore) refused = true;
    }
    return refused;
  }

  /** From memory when fresh enough, else from the store: what a guard with `revocation: 'local'` asks. */
  refusesRecently(authorized: Authorized): Promise<boolean> {
    const known = this.refusesFromMemory(authorized);
    return known === undefined ? this.refuses(authorized) : Promise.resolve(known);
  }

  private keysOf({ clientId, subscriberId }: Authorized): string[] {
    const client = keyOf('client', clientId);
    return typeof subscriberId === 'string' ? [keyOf('subscriber', subscriberId), client] : [client];
  }

  /** Remembers a marker read at `readAt`; a marker this process knows never moves back. Answers the one in force. */
  private learn(key: string, notBefore: number, readAt: number): number {
    const previous = this.known.get(key);
    const inForce = Math.max(notBefore, previous?.notBefore ?? 0);
    // Moved to the end: the least recently read goes first when full.
    this.known.delete(key);
    if (previous === undefined && this.known.size >= this.limit) {
      const oldest = this.known.keys().next();
      if (!oldest.done) this.known.delete(oldest.value);
    }
    this.known.set(key, { notBefore: inForce, readAt });
    return inForce;
  }
}

/** What a grant presents at the token endpoint, as its refusal names it. */
export type Presented = 'code' | 'auth_req_id' | 'refresh_token';

/** The answer when a revocation of the subscriber or client covers what was presented. */
export function revokedError(what: Presented): OAuthError {
  return new OAuthError('invalid_grant', `the ${what} was revoked by the operator`);
}

/**
 * Whether a revocation covers a stored code's or request's authorization: the markers asked for now, so their reads
 * travel in the same round trip as whatever else the caller sends before it awaits the answer (the consume that
 * issues the tokens: `IssueOptions.revoked`). A failed read is seen where the answer is awaited, never unhandled.
 */
export function askRevoked(
  markers: NotBeforeMarkers,
  record: { clientId: string; subscriberId: string; authorizedAt?: unknown },
): Promise<boolean> {
  const answer = markers.refuses({
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    authorizedAt: authorizedAtOf(record),
  });
  answer.catch(() => {});
  return answer;
}

/**
 * A code, auth_req_id or refresh token presented at the token endpoint: invalid_grant when a revocation of its
 * subscriber or client covers it (the markers read from the store, before anything is consumed or issued).
 */
export async function refuseRevoked(
  markers: NotBeforeMarkers,
  record: { clientId: string; subscriberId: string; authorizedAt?: unknown },
  what: Presented,
): Promise<void> {
  if (await askRevoked(markers, record)) throw revokedError(what);
}
