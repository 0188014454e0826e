/**
 * Noticing that Redis lost the store's data. A Redis restarted without persistence (or flushed, or failed over
 * to a replica that never had the data) comes back empty, and then every token, code, consent and revocation
 * is silently gone: clients see `invalid_token`, and revoked JWT access tokens pass a store-backed guard again.
 *
 * Every store on the same Redis and prefix shares one marker key per shard, holding a random value, written
 * without expiry by the first store to find it missing. Each store remembers the value it saw, and checks it
 * whenever its client reconnects to a node or learns a new master, and every `interval` ms: another value (or
 * none) means the shard lost its data since (another instance may have written a new marker first). That is
 * reported, once per loss and per store, and the new value remembered, so the next loss is noticed too.
 */
import { randomBytes } from 'node:crypto';
import { describeFailures, type RedisConnection } from './redis-connection.js';
import { StoreUnavailableError } from './store.js';
import { markerKey } from './redis-keys.js';
import { MARK } from './redis-scripts.js';

/** Reported (RedisStore's `onDataLoss`) when a Redis shard came back without the store's data. */
export class StoreDataLossError extends Error {
  /** Stable identifier for handlers and logs (also the code of the default `onDataLoss` warning). */
  readonly code = 'NETAUTH_REDIS_DATA_LOSS';

  constructor(
    /** `host:port` of the shard, or a description of the set-up. */
    readonly shard: string,
  ) {
    super(
      `Redis at ${shard} lost the store's data (restarted without persistence, flushed, or failed over to a replica without it): ` +
        'tokens, codes, consents and revocations written before are gone. See docs/redis-store.md#persistence-what-consent-records-need',
    );
    this.name = 'StoreDataLossError';
  }
}

export class DataLossWatch {
  /** The value of each marker key when last seen. */
  private readonly seen = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private checking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    private readonly report: (error: StoreDataLossError) => void,
    private readonly interval: number,
  ) {}

  /**
   * Places the markers and watches them from now on. Called again after a failed start: the client behind the
   * connection may have changed meanwhile (a URL found to name a cluster node), so the listener moves to it.
   */
  start(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (!this.timer) {
      this.timer = setInterval(() => void this.check().catch(() => {}), this.interval);
      this.timer.unref();
    }
    this.unsubscribe?.();
    this.unsubscribe = this.connection.onReconnect(() => void this.check().catch(() => {}));
    return this.check();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.retry);
    this.unsubscribe?.();
  }

  /** One check at a time; an error (Redis down) leaves the markers as they were known. */
  check(): Promise<void> {
    this.checking ??= this.checkShards().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  /**
   * Every shard that answers; rejects only when none does, naming each shard and why. A shard that is down now
   * gets its marker when it answers again (its reconnect, or the next interval).
   */
  private async checkShards(): Promise<void> {
    const shards = this.connection.shardTags();
    const settled = await Promise.allSettled(
      shards.map(async ({ tag, address }) => {
        const key = markerKey(this.prefix, tag);
        const value = String(await this.connection.script(MARK, [key], [randomBytes(12).toString('base64url')]));
        const before = this.seen.get(key);
        this.seen.set(key, value);
        if (before !== undefined && before !== value && !this.stopped) this.report(new StoreDataLossError(address));
      }),
    );
    const failed = settled.filter((r) => r.status === 'rejected').length;
    // A shard down now: look again soon, so its marker is in place shortly after it returns.
    if (failed > 0 && !this.stopped) {
      clearTimeout(this.retry);
      this.retry = setTimeout(() => void this.check().catch(() => {}), 1000);
      this.retry.unref();
    }
    if (failed < settled.length) return;
    const answers = settled.map((r, i) => ({
      address: shards[i]!.address,
      error: unwrap((r as PromiseRejectedResult).reason),
    }));
    if (answers.length === 1) throw (settled[0] as PromiseRejectedResult).reason;
    throw new StoreUnavailableError(`cannot reach Redis at ${describeFailures(answers)}`, { cause: answers[0]?.error });
  }
}

function unwrap(error: unknown): unknown {
  return error instanceof StoreUnavailableError && error.cause !== undefined ? error.cause : error;
}
