/**
 * The store contract. Every piece of server-side state (codes, backchannel requests, access tokens,
 * consent records, consent-page interactions) goes through these six operations, so the memory store and the
 * Redis store are interchangeable and pass one shared contract test suite (test/stores/contract.ts).
 *
 * Modelled on express-session's Store and node-oidc-provider's adapter, reduced to what the grants need:
 * - `put` writes a whole record with a TTL; the store forgets it after the TTL.
 * - `consume` is the single-use primitive: atomically marks the record consumed and reports whether
 *   THIS call did it. Of any number of concurrent calls, exactly one gets `true`. The record stays
 *   readable (with `consumed: true`) until it expires, so a replay can be recognised. Records attached to
 *   the call (the token a code or an auth_req_id is exchanged for) are written in the same atomic step,
 *   so no failure can leave the record consumed without them.
 * - `add` is the replay-detection primitive: it writes only when no live record has the id, and reports
 *   whether THIS call wrote it (a `jti` seen once is refused afterwards, also under concurrency).
 * - `revokeGrant` deletes every record written with that grant id (RFC 6749 §4.1.2: a replayed code
 *   revokes the tokens issued from it; revoking consent revokes the tokens issued under it).
 *
 * Placement: an id may carry a tag, `<tag>.<rest>` (see `placementTag`). Records whose ids carry the same tag,
 * and the grants whose ids carry it, belong together: a store that spreads records over shards (Redis Cluster)
 * keeps them on one, so it can update them in one atomic step. The gateway gives every record of one grant
 * (its code or auth_req_id, their poll state, the tokens issued from them, the grant itself) one random tag,
 * and all consent records of one client and subscriber another.
 *
 * Shared counters: a store that every gateway instance of a fleet reaches may also offer `counters()`, where the
 * rate limits and the client-authentication lock-out count, so their limits hold across the fleet. A store without
 * it (MemoryStore: one process) leaves each instance counting for itself.
 */

/** The kinds of record the package keeps. A store may use them as key prefixes. */
export type RecordKind =
  | 'code'
  | 'backchannel'
  | 'poll'
  | 'access_token'
  /** Refresh tokens (under their hash), kept after use (rotation) so a reuse is recognised. */
  | 'refresh_token'
  | 'consent'
  | 'interaction'
  | 'session'
  | 'revoked'
  /** A redeemed code's or auth_req_id's tokens, sealed, kept a short while for the same client's retry. */
  | 'redemption'
  /** Identifiers of single-use JWTs (client assertions, request objects, proofs) seen until they expire. */
  | 'jti'
  /**
   * One per revoked subscriber or client (`subscriber:<id>`, `client:<id>`): the time before which nothing it was
   * granted counts, checked where a token or request is used. Kept as long as anything granted before can live, so
   * a revocation is one write and an issued token costs nothing more (docs/operations.md).
   */
  | 'not_before';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface PutOptions {
  /** Seconds until the store may forget the record. Must be > 0. */
  ttl: number;
  /** Grant ids the record belongs to; `revokeGrant(id)` deletes it. */
  grants?: readonly string[];
}

/** A record to write, as `put` takes it: for `consume`, which writes it only when it consumes. */
export interface RecordWrite {
  kind: RecordKind;
  id: string;
  value: JsonObject;
  options: PutOptions;
}

/** Longest placement tag: short, as every key of a sharded store repeats it. */
const MAX_TAG = 16;

/** `[A-Za-z0-9_-]`, by character code. */
function isTagCharacter(code: number): boolean {
  return (
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x30 && code <= 0x39) ||
    code === 0x5f ||
    code === 0x2d
  );
}

/**
 * The placement tag an id carries: the text before its first `.` when that is 1 to 16 characters of
 * `[A-Za-z0-9_-]`, else undefined (the id is placed by itself). `Ab3dEf_1.kJ8…` carries `Ab3dEf_1`. Read by hand,
 * not by a pattern: every token the guard checks goes through here.
 */
export function placementTag(id: string): string | undefined {
  const end = Math.min(id.length, MAX_TAG + 1);
  for (let i = 0; i < end; i++) {
    const code = id.charCodeAt(i);
    if (code === 0x2e) return i === 0 ? undefined : id.slice(0, i);
    if (!isTagCharacter(code)) return undefined;
  }
  return undefined;
}

export interface StoredRecord<T extends JsonObject = JsonObject> {
  value: T;
  /** True once `consume` has succeeded for this record. */
  consumed: boolean;
}

/** A Lua script of the counters (lib/ops/counter-scripts.ts): its source, and the SHA-1 EVALSHA names it by. */
export interface CounterScript {
  readonly source: string;
  readonly sha: string;
}

/**
 * Where the rate limits and the lock-out count when a store shares its counters (`Store.counters`): a Redis (or any
 * server that runs Redis Lua scripts) every instance reaches. Each call is one script, so each count is atomic.
 */
export interface SharedCounters {
  /** The store's key prefix: the counters' keys go under it + `rl:` unless `rateLimits.keyPrefix` names another. */
  readonly prefix: string;
  /**
   * Runs `script` over `keys` (which share one Redis Cluster hash tag) and `args`: EVALSHA, loading the script
   * when the server does not know it. Rejects when it cannot (StoreUnavailableError when unreachable); the
   * rate limits then count in the process meanwhile, and say so.
   */
  script(script: CounterScript, keys: string[], args: string[]): Promise<unknown>;
  /** Where the counters are, for messages: hosts and ports, never credentials. */
  describe(): string;
}

export interface Store {
  /** Writes (or overwrites, resetting `consumed`) the record. */
  put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void>;
  get<T extends JsonObject = JsonObject>(kind: RecordKind, id: string): Promise<StoredRecord<T> | undefined>;
  /**
   * Writes the record only if no live record has this kind and id. True only for the one call that wrote it:
   * of concurrent calls with the same id exactly one gets `true`.
   */
  add(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<boolean>;
  /**
   * Atomically marks the record consumed. True only for the one call that did it, and only that call writes
   * `writes`, in the same atomic step: after it they exist exactly when the record was consumed by this call.
   * Their ids should carry the consumed id's placement tag (a sharded store needs them on the same shard).
   */
  consume(kind: RecordKind, id: string, writes?: readonly RecordWrite[]): Promise<boolean>;
  delete(kind: RecordKind, id: string): Promise<void>;
  /** Deletes every record written with this grant id. */
  revokeGrant(grantId: string): Promise<void>;
  /** Releases timers and connections. */
  close?(): Promise<void>;
  /** Optional: where the store keeps its data, for operators' messages (e.g. `Redis at 10.0.0.5:6379`). No secrets. */
  describe?(): string;
  /**
   * Optional: the counters every instance on this store shares, for the rate limits and the lock-out (RedisStore:
   * its Redis). Without it each process counts for itself, unless `rateLimits.redis` names a Redis.
   */
  counters?(): SharedCounters;
}

/** Thrown by a store whose backend is unreachable; endpoints answer 503 temporarily_unavailable. */
export class StoreUnavailableError extends Error {
  /** Stable identifier for handlers and logs; the message may change. */
  readonly code = 'NETAUTH_STORE_UNAVAILABLE';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
