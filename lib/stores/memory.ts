import type { JsonObject, JsonValue, PutOptions, RecordKind, RecordWrite, Store, StoredRecord } from './store.js';
import { ExpiryQueue } from './expiry-queue.js';
import { MEMORY_STORE_DEFAULTS } from '../defaults.js';

export interface MemoryStoreOptions {
  /** Milliseconds clock; tests inject one to expire records without waiting. */
  now?: () => number;
  /**
   * How often idle expired entries are swept, in ms (they are also swept on every operation).
   * @defaultValue 30000
   */
  sweepInterval?: number;
}

interface Entry {
  value: JsonObject;
  consumed: boolean;
  expiresAt: number;
  grants: readonly string[];
}

const NO_GRANTS: readonly string[] = Object.freeze([]);

/** A frozen deep copy of a JSON value, in one pass (cheaper than structuredClone followed by a freeze). */
function frozenCopy<T extends JsonValue>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const copy = new Array<JsonValue>(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = frozenCopy(value[i] as JsonValue);
    return Object.freeze(copy) as T;
  }
  const copy: Record<string, JsonValue> = {};
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, JsonValue | undefined>)[key];
    // JSON drops undefined members; so does a Redis round trip.
    if (child === undefined) continue;
    // A key named __proto__ stays data, as JSON.parse would keep it.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: frozenCopy(child), enumerable: true });
    else copy[key] = frozenCopy(child);
  }
  return Object.freeze(copy) as T;
}

function checkTtl(options: PutOptions): void {
  if (!(options.ttl > 0)) throw new RangeError('ttl must be a positive number of seconds');
}

/**
 * The embedded default store: one process, nothing survives a restart. Records are copied and frozen
 * on `put`, so neither the caller nor a reader can change what is stored. JavaScript runs one operation
 * at a time, so `consume` is atomic without locks. Expired entries are reclaimed from a min-heap of
 * expiry times on each operation and by an unref'd timer, so memory is bounded by what is live.
 */
export class MemoryStore implements Store {
  private readonly entries = new Map<string, Entry>();
  /** Grant id -> its records' keys: the key itself while there is one (most grants), a Set from the second on. */
  private readonly grants = new Map<string, string | Set<string>>();
  private readonly queue = new ExpiryQueue();
  private readonly now: () => number;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    const interval = options.sweepInterval ?? MEMORY_STORE_DEFAULTS.sweepInterval;
    if (interval > 0) {
      this.timer = setInterval(() => this.sweep(), interval);
      this.timer.unref();
    }
  }

  /** Number of live entries (for monitoring and tests). */
  get size(): number {
    this.sweep();
    return this.entries.size;
  }

  async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    checkTtl(options);
    this.write(kind, id, value, options);
  }

  /** `put` with nothing awaited: callers that must not yield between a check and the write use it. */
  private write(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): void {
    this.sweep();
    const key = `${kind}:${id}`;
    const previous = this.entries.get(key);
    if (previous) this.unindex(key, previous);
    const expiresAt = this.now() + options.ttl * 1000;
    const grants = options.grants && options.grants.length > 0 ? [...options.grants] : NO_GRANTS;
    this.entries.set(key, { value: frozenCopy(value), consumed: false, expiresAt, grants });
    for (const grant of grants) {
      const keys = this.grants.get(grant);
      if (keys === undefined) this.grants.set(grant, key);
      else if (typeof keys !== 'string') keys.add(key);
      else if (keys !== key) this.grants.set(grant, new Set([keys, key]));
    }
    this.queue.push(expiresAt, key);
  }

  async add(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<boolean> {
    checkTtl(options);
    if (this.live(`${kind}:${id}`)) return false;
    // Nothing awaited between the check and the write: nothing else runs in between.
    this.write(kind, id, value, options);
    return true;
  }

  async get<T extends JsonObject = JsonObject>(kind: RecordKind, id: string): Promise<StoredRecord<T> | undefined> {
    const entry = this.live(`${kind}:${id}`);
    return entry ? { value: entry.value as T, consumed: entry.consumed } : undefined;
  }

  async consume(kind: RecordKind, id: string, writes: readonly RecordWrite[] = []): Promise<boolean> {
    for (const w of writes) checkTtl(w.options);
    const entry = this.live(`${kind}:${id}`);
    if (!entry || entry.consumed) return false;
    entry.consumed = true;
    for (const w of writes) this.write(w.kind, w.id, w.value, w.options);
    return true;
  }

  async delete(kind: RecordKind, id: string): Promise<void> {
    this.remove(`${kind}:${id}`);
  }

  async revokeGrant(grantId: string): Promise<void> {
    const keys = this.grants.get(grantId);
    if (keys === undefined) return;
    for (const key of typeof keys === 'string' ? [keys] : [...keys]) this.remove(key);
    this.grants.delete(grantId);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
  }

  private live(key: string): Entry | undefined {
    const now = this.now();
    this.sweep(now);
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= now) {
      this.remove(key);
      return undefined;
    }
    return entry;
  }

  private sweep(now = this.now()): void {
    this.queue.drain(now, this.expire);
  }

  /** The sweep's callback, made once: every read and write sweeps. */
  private readonly expire = (key: string, expiresAt: number): void => {
    // The heap keeps stale times of overwritten entries; only the current one counts.
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt === expiresAt) this.remove(key);
  };

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.unindex(key, entry);
  }

  private unindex(key: string, entry: Entry): void {
    for (const grant of entry.grants) {
      const keys = this.grants.get(grant);
      if (keys === undefined) continue;
      if (typeof keys === 'string') {
        if (keys === key) this.grants.delete(grant);
        continue;
      }
      keys.delete(key);
      if (keys.size === 0) this.grants.delete(grant);
    }
  }
}
