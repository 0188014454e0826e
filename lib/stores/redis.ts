import type * as Redis from 'redis';
import type { JsonObject, PutOptions, RecordKind, Store, StoredRecord } from './store.js';
import { StoreUnavailableError } from './store.js';
import { ADD, CONSUME, DELETE, PUT, REVOKE, type Script } from './redis-scripts.js';
import { requirePeer } from '../optional-peer.js';

/**
 * What RedisStore needs from a client: a node-redis (v5) `RedisClientType` fits. Kept structural so a
 * client created with any module set, or by `@redis/client` directly, can be injected.
 */
export interface RedisCommandClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: ReadonlyArray<string>, options?: { timeout?: number }): Promise<unknown>;
}

export interface RedisStoreOptions {
  /**
   * An existing, connected client. The store never closes it, and its owner must listen for its
   * 'error' events (node-redis crashes the process on an unhandled one).
   */
  client?: RedisCommandClient;
  /** Used when no client is given, e.g. `redis://localhost:6379` or `rediss://…`. */
  url?: string;
  /** Prefix of every key the store writes. Default `netauth:`. */
  prefix?: string;
  /**
   * Milliseconds an operation may take before it rejects with StoreUnavailableError; also the connect
   * timeout of a client the store creates. Default 2000.
   */
  timeout?: number;
  /** Called with connection errors of a client the store creates (they surface as rejections anyway). */
  onError?: (err: unknown) => void;
}

type OwnedClient = ReturnType<typeof Redis.createClient>;

// Error replies that describe a passing server state rather than a bad command.
const TRANSIENT_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|OOM|TRYAGAIN|CLUSTERDOWN|NOREPLICAS)\b/;

/** A Redis error reply (a command the server answered with an error), by name so any copy of node-redis fits. */
function isErrorReply(err: unknown): err is Error {
  let proto: unknown = err !== null && typeof err === 'object' ? Object.getPrototypeOf(err) : null;
  while (proto && proto !== Error.prototype) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true;
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}

/**
 * The shared store for several gateway instances: records live in Redis with Redis TTLs, and every
 * multi-key or read-then-write operation is one Lua script (lib/stores/redis-scripts.ts), so single use
 * holds across instances. Connection failures reject promptly with StoreUnavailableError (commands are
 * not queued while offline, and every operation has a deadline); a client the store creates reconnects
 * by itself with capped backoff, so the store recovers when Redis is back.
 */
export class RedisStore implements Store {
  private readonly client: RedisCommandClient;
  private readonly owned: OwnedClient | undefined;
  /** Prefix of every key the store writes. */
  readonly prefix: string;
  private readonly timeout: number;
  /** Settles on the created client's first connection attempt; until then operations wait for it. */
  private firstAttempt: Promise<void> | undefined;
  private closed = false;

  constructor(options: RedisStoreOptions = {}) {
    this.prefix = options.prefix ?? 'netauth:';
    this.timeout = options.timeout ?? 2000;
    if (!(this.timeout > 0)) throw new RangeError('timeout must be a positive number of milliseconds');
    if (options.client) {
      this.client = options.client;
      return;
    }
    const onError = options.onError ?? (() => {});
    // redis is an optional peer dependency, loaded only by a store that creates its own client.
    const { createClient } = requirePeer<typeof Redis>('redis', 'new RedisStore({ url })');
    const client = createClient({
      ...(options.url !== undefined ? { url: options.url } : {}),
      // Fail fast while disconnected instead of queueing: the caller answers 503 and the client retries.
      disableOfflineQueue: true,
      socket: {
        connectTimeout: this.timeout,
        // Never give up; back off up to 2 s, with jitter so many instances do not reconnect in step.
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 2000) + Math.floor(Math.random() * 100),
      },
    });
    client.on('error', onError);
    this.owned = client;
    this.client = client as unknown as RedisCommandClient;
  }

  async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    await this.eval(PUT, [this.key(kind, id)], this.writeArgs(value, options));
  }

  async add(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<boolean> {
    return (await this.eval(ADD, [this.key(kind, id)], this.writeArgs(value, options))) === 1;
  }

  /** ARGV of PUT and ADD. */
  private writeArgs(value: JsonObject, options: PutOptions): string[] {
    const ttl = Math.ceil(options.ttl * 1000);
    if (!(options.ttl > 0) || !Number.isSafeInteger(ttl)) {
      throw new RangeError('ttl must be a positive, finite number of seconds');
    }
    const grants = [...new Set(options.grants ?? [])].map(String);
    return [this.grantPrefix(), String(ttl), JSON.stringify(value), JSON.stringify(grants), ...grants];
  }

  async get<T extends JsonObject = JsonObject>(kind: RecordKind, id: string): Promise<StoredRecord<T> | undefined> {
    const reply = (await this.command(['HMGET', this.key(kind, id), 'v', 'c'])) as [string | null, string | null];
    const [value, consumed] = reply;
    if (value === null || value === undefined) return undefined;
    return { value: JSON.parse(value) as T, consumed: consumed === '1' };
  }

  async consume(kind: RecordKind, id: string): Promise<boolean> {
    return (await this.eval(CONSUME, [this.key(kind, id)], [])) === 1;
  }

  async delete(kind: RecordKind, id: string): Promise<void> {
    await this.eval(DELETE, [this.key(kind, id)], [this.grantPrefix()]);
  }

  async revokeGrant(grantId: string): Promise<void> {
    await this.eval(REVOKE, [this.grantPrefix() + grantId], [this.grantPrefix(), grantId]);
  }

  /**
   * The node-redis client behind the store, for companions that speak node-redis commands (the gateway's
   * rate-limit counters share the store's connection): the client the store created, or the injected one
   * when it is node-redis. Undefined for an injected client that only offers `sendCommand`.
   */
  nodeRedisClient(): OwnedClient | undefined {
    if (this.owned) return this.owned;
    const client = this.client as Partial<Record<'eval' | 'multi' | 'del', unknown>>;
    return typeof client.eval === 'function' && typeof client.multi === 'function' && typeof client.del === 'function'
      ? (this.client as unknown as OwnedClient)
      : undefined;
  }

  /** Opens the client the store created, as its first operation would, and waits for that first attempt's outcome. */
  async open(): Promise<void> {
    if (!this.closed) await this.connected();
  }

  /** Quits the client the store created; an injected client stays open (its owner closes it). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const client = this.owned;
    if (!client?.isOpen) return;
    if (!client.isReady) {
      // Reconnecting: nothing to flush, and close() would wait for a reply that is not coming.
      client.destroy();
      return;
    }
    await client.close();
  }

  private key(kind: RecordKind, id: string): string {
    return `${this.prefix}rec:${kind}:${id}`;
  }

  private grantPrefix(): string {
    return `${this.prefix}grant:`;
  }

  /** EVALSHA, loading the script with EVAL when the server does not know it (new or restarted server). */
  private async eval(script: Script, keys: string[], args: string[]): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await this.command(['EVALSHA', script.sha, ...tail]);
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
      return this.command(['EVAL', script.source, ...tail]);
    }
  }

  /** Runs one command within the deadline; connection trouble becomes StoreUnavailableError. */
  private async command(args: string[]): Promise<unknown> {
    if (this.closed) throw new StoreUnavailableError('Redis store is closed');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`Redis did not answer within ${this.timeout} ms`)), this.timeout);
    });
    try {
      await Promise.race([this.connected(), deadline]);
      // node-redis' own timeout drops a command still waiting to be written (offline queue of an injected
      // client); the race bounds one already written to a server that does not answer.
      return await Promise.race([this.client.sendCommand(args, { timeout: this.timeout }), deadline]);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      if (isErrorReply(err) && !TRANSIENT_REPLIES.test(err.message)) throw err;
      throw new StoreUnavailableError('Redis is unavailable', { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Opens the created client on first use and waits for the outcome of that first attempt only: later,
   * while reconnecting, commands fail fast instead of waiting (disableOfflineQueue).
   */
  private connected(): Promise<void> | undefined {
    const client = this.owned;
    if (!client) return undefined;
    if (!this.firstAttempt) {
      this.firstAttempt = new Promise<void>((resolve) => {
        const settle = () => {
          client.off('ready', settle);
          client.off('error', settle);
          resolve();
        };
        client.on('ready', settle);
        client.on('error', settle);
      });
      // Failures are retried by the reconnect strategy and reported through 'error'.
      client.connect().catch(() => {});
    }
    return this.firstAttempt;
  }
}
