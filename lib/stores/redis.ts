import type { JsonObject, PutOptions, RecordKind, RecordWrite, SharedCounters, Store, StoredRecord } from './store.js';
import { CONSUME, INDEX, PUT, REVOKE } from './redis-scripts.js';
import {
  decodeRecord,
  encodeRecord,
  grantKey,
  memberOf,
  recordKey,
  tagOfMember,
  type PlacedKey,
} from './redis-keys.js';
import { RedisConnection, type RedisStoreClient } from './redis-connection.js';
import { DataLossWatch, type StoreDataLossError } from './redis-markers.js';
import { REDIS_STORE_DEFAULTS } from '../defaults.js';
import { ReplicaWaits, type ReplicaShortfall } from './redis-replicas.js';
import type { TopologyFaultKind } from './redis-sentinel-guard.js';

export type {
  RedisCommandClient,
  RedisClusterCommandClient,
  RedisSentinelCommandClient,
  RedisStoreClient,
} from './redis-connection.js';
export { StoreDataLossError } from './redis-markers.js';
export type { ReplicaShortfall } from './redis-replicas.js';
export type { TopologyFaultKind } from './redis-sentinel-guard.js';

/** A fault of the Redis set-up the store noticed (docs/redis-store.md#faults-what-clients-see). */
export interface TopologyFault {
  /**
   * `stale-slot-map`: a cluster's slot map could not be refreshed (no master answered, or the one asked did not in
   * time) or a command met MOVED/ASK; `second-master`: a node that says it is master while Sentinel names another
   * (the store refuses it); `sentinel-quorum`: Sentinel did not answer, or has no quorum (no failover can happen).
   */
  readonly kind: TopologyFaultKind;
  /** `host:port` of the node concerned, or a description of the set-up. */
  readonly node: string;
}

export interface RedisStoreOptions {
  /**
   * A connected node-redis (v5) client: `createClient()`, `createCluster()` or `createSentinel()`. The store
   * never closes it, and its owner must listen for its 'error' events (node-redis crashes the process on an
   * unhandled one). Give it `disableOfflineQueue: true` (cluster: in `defaults`), so commands fail at once
   * while Redis is unreachable.
   */
  client?: RedisStoreClient;
  /**
   * Used when no client is given, e.g. `rediss://…`: the store creates, owns and closes its client (the `redis`
   * package must be installed). A Redis Cluster node's URL gets a cluster client, which discovers the other nodes.
   * @defaultValue `redis://localhost:6379`
   */
  url?: string;
  /**
   * Prefix of every key the store writes. No `{` or `}`: keys carry their own hash tags.
   * @defaultValue `netauth:`
   */
  prefix?: string;
  /**
   * Milliseconds an operation may take before it rejects with StoreUnavailableError; also the connect
   * timeout of a client the store creates.
   * @defaultValue 2000
   */
  timeout?: number;
  /** Called with connection errors of a client the store creates (they surface as rejections anyway). */
  onError?: (err: unknown) => void;
  /**
   * Called when a Redis shard comes back without the store's data (docs/redis-store.md#persistence-what-consent-records-need).
   * @defaultValue a process warning (`process.emitWarning`), printed on stderr
   */
  onDataLoss?: (error: StoreDataLossError) => void;
  /**
   * After each write, wait (`WAIT`, at most `replicaWait` ms, no extra round trip) until this many replicas have
   * it, so a write the gateway has answered survives a failover. At most the replicas a master has online (read
   * again on every topology change).
   * 0 never waits.
   * @defaultValue 1 (0 on a master without replicas)
   */
  waitForReplicas?: number;
  /**
   * Milliseconds a write waits for its replicas at most (`WAIT`'s timeout). A replica that does not confirm in
   * time is a shortfall: the store stops waiting for it until it catches up.
   * Raise it for replicas farther away than that (another region) or on a loaded host.
   * @defaultValue 100
   */
  replicaWait?: number;
  /**
   * Called when writes to a master reach fewer replicas than they wait for (a replica lagging or gone), once
   * until its replicas catch up again; the write itself succeeds. `replicaShortfalls` counts such writes.
   * @defaultValue a process warning (`process.emitWarning`)
   */
  onReplicaShortfall?: (shortfall: ReplicaShortfall) => void;
  /**
   * Called when the store notices a fault of the topology (a stale slot map, a second master, no Sentinel quorum),
   * at most once a minute per kind; `topologyFaults` counts every time it is noticed.
   * @defaultValue a process warning (`process.emitWarning`, code `NETAUTH_REDIS_TOPOLOGY`)
   */
  onTopologyFault?: (fault: TopologyFault) => void;
  /**
   * `open()` refuses a Redis whose `maxmemory-policy` is not `noeviction` (eviction silently drops tokens,
   * consumed codes and revocations; docs/redis-store.md#eviction-noeviction), and warns where `CONFIG GET` is not
   * allowed (managed Redis). `true` skips the check.
   * @defaultValue false
   */
  allowEviction?: boolean;
}

/** A key the script of a grant (or write) must update, grouped by hash tag. */
type Groups = Map<string, string[]>;

function addTo(groups: Groups, tag: string, key: string): void {
  const keys = groups.get(tag);
  if (keys) keys.push(key);
  else groups.set(tag, [key]);
}

function checkTtl(options: PutOptions): number {
  const ttl = Math.ceil(options.ttl * 1000);
  if (!(options.ttl > 0) || !Number.isSafeInteger(ttl))
    throw new RangeError('ttl must be a positive, finite number of seconds');
  return ttl;
}

/** One record write, ready for the scripts. */
interface PreparedWrite {
  record: PlacedKey;
  ttl: number;
  encoded: string;
  member: string;
  /** Indexes of the record's grants, by hash tag. */
  indexes: Groups;
}

/**
 * The shared store for several gateway instances: records live in Redis with Redis TTLs, and every
 * multi-key or read-then-write operation is one Lua script (lib/stores/redis-scripts.ts), so single use
 * holds across instances. Works on one Redis, behind Sentinel, and on Redis Cluster, where the records of
 * one grant share a hash tag (lib/stores/redis-keys.ts) and grants spread over all shards. Connection
 * failures reject promptly with StoreUnavailableError; a client the store creates reconnects by itself,
 * and a cluster finds a promoted replica by itself, so the store recovers without a restart.
 */
export class RedisStore implements Store {
  /** Prefix of every key the store writes. */
  readonly prefix: string;
  private readonly connection: RedisConnection;
  private readonly watch: DataLossWatch;
  private readonly waits: ReplicaWaits;
  private readonly allowEviction: boolean;
  private ready: Promise<void> | undefined;
  /** Set once `ready` resolved; cleared when `open()` prepares again. */
  private isPrepared = false;
  private readonly faults: Record<TopologyFaultKind, number> = {
    'stale-slot-map': 0,
    'second-master': 0,
    'sentinel-quorum': 0,
  };

  constructor(options: RedisStoreOptions = {}) {
    this.prefix = options.prefix ?? REDIS_STORE_DEFAULTS.prefix;
    this.allowEviction = options.allowEviction ?? REDIS_STORE_DEFAULTS.allowEviction;
    if (/[{}]/.test(this.prefix)) {
      throw new TypeError(
        `RedisStore prefix "${this.prefix}" contains a brace: keys carry their own hash tags now, so remove the { } (docs/redis-store.md#migrating-from-01)`,
      );
    }
    const timeout = options.timeout ?? REDIS_STORE_DEFAULTS.timeout;
    if (!(timeout > 0)) throw new RangeError('timeout must be a positive number of milliseconds');
    const waitFor = options.waitForReplicas;
    if (waitFor !== undefined && !(Number.isInteger(waitFor) && waitFor >= 0))
      throw new RangeError('waitForReplicas must be a whole number >= 0');
    const replicaWait = options.replicaWait ?? REDIS_STORE_DEFAULTS.replicaWait;
    if (!(Number.isInteger(replicaWait) && replicaWait > 0))
      throw new RangeError('replicaWait must be a whole number of milliseconds > 0');
    const target = options.client ? { client: options.client } : { url: options.url ?? REDIS_STORE_DEFAULTS.url };
    const onError = options.onError ?? (() => {});
    const onTopologyFault =
      options.onTopologyFault ??
      ((f: TopologyFault) => process.emitWarning(`Redis at ${f.node}: ${f.kind}`, { code: 'NETAUTH_REDIS_TOPOLOGY' }));
    const told = new Map<TopologyFaultKind, number>();
    const onFault = (kind: TopologyFaultKind, node: string) => {
      this.faults[kind]++;
      // A fault is noticed on every failed command while it lasts: told once a minute, counted each time.
      const now = Date.now();
      if (now - (told.get(kind) ?? -Infinity) < 60_000) return;
      told.set(kind, now);
      onTopologyFault({ kind, node });
    };
    this.connection = new RedisConnection({ timeout, replicaWait, onError, onFault, ...target });
    const onDataLoss =
      options.onDataLoss ??
      ((error: StoreDataLossError) => process.emitWarning(error.message, { code: 'NETAUTH_REDIS_DATA_LOSS' }));
    this.watch = new DataLossWatch(this.connection, this.prefix, onDataLoss, 10_000);
    const where = (node: string) => (node === '' ? this.connection.describe() : node);
    const onShortfall =
      options.onReplicaShortfall ??
      ((s: ReplicaShortfall) =>
        process.emitWarning(`Redis at ${where(s.node)}: writes reach ${s.acknowledged} of ${s.expected} replicas`, {
          code: 'NETAUTH_REDIS_REPLICA_SHORTFALL',
        }));
    this.waits = new ReplicaWaits(this.connection, waitFor, onShortfall, 10_000);
  }

  /** Topology faults noticed, per kind, since the store was made (metrics: see `onTopologyFault`). */
  get topologyFaults(): Readonly<Record<TopologyFaultKind, number>> {
    return { ...this.faults };
  }

  /** Writes that reached fewer replicas than they waited for (a metric: see `onReplicaShortfall`). */
  get replicaShortfalls(): number {
    return this.waits.shortfalls;
  }

  /**
   * Connects (a created client), checks Redis answers as a writable master, and places the data-loss markers.
   * Rejects with StoreUnavailableError naming where Redis was expected: call it at start-up, so a wrong URL or
   * a Redis that is down stops the start instead of answering every request with 503. Operations do the same
   * on first use, without failing the start. On a cluster it starts when one shard answers. Rejects too when
   * Redis may evict keys (see `allowEviction`).
   */
  async open(): Promise<void> {
    await this.connection.open();
    // Through prepared(), so the first operation finds it done instead of preparing again.
    this.ready = undefined;
    this.isPrepared = false;
    // Side by side: a shard that is down costs each of them the deadline.
    await Promise.all([this.prepared(), this.allowEviction ? undefined : this.checkEviction()]);
  }

  /** Each master that answers must keep every key until it expires (`maxmemory-policy noeviction`). */
  private async checkEviction(): Promise<void> {
    for (const shard of await this.connection.eachShard(['CONFIG', 'GET', 'maxmemory-policy'])) {
      if (shard.answer === undefined) {
        // Not allowed (an ACL, or managed Redis), or the shard is down: the operator checks it.
        if (!shard.unavailable) {
          const text = `cannot read maxmemory-policy of Redis at ${shard.address}: make sure it is noeviction`;
          const code = 'NETAUTH_REDIS_EVICTION_UNKNOWN';
          process.emitWarning(`${text} (docs/redis-store.md#eviction-noeviction)`, { code });
        }
        continue;
      }
      const reply = shard.answer as unknown[] | Record<string, unknown>;
      const policy = String(Array.isArray(reply) ? reply[1] : reply['maxmemory-policy']);
      if (policy === 'noeviction') continue;
      throw new Error(
        `Redis at ${shard.address} evicts keys (maxmemory-policy ${policy}): tokens, used codes and revocations ` +
          'would vanish before they expire. Set maxmemory-policy noeviction ' +
          '(docs/redis-store.md#eviction-noeviction), or pass allowEviction: true',
      );
    }
  }

  /** Where Redis is expected (host and port, never the URL's credentials), for operators' messages. */
  describe(): string {
    return `RedisStore, Redis at ${this.connection.describe()}`;
  }

  /** The rate limits' shared counters: on the store's connection, with its handling of clusters and failovers. */
  counters(): SharedCounters {
    const connection = this.connection;
    return {
      prefix: this.prefix,
      script: (script, keys, args) => connection.script(script, keys, args),
      describe: () => connection.describe(),
    };
  }

  async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    await this.write(this.prepareWrite({ kind, id, value, options }), false);
  }

  async add(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<boolean> {
    return (await this.write(this.prepareWrite({ kind, id, value, options }), true)) === 1;
  }

  async get<T extends JsonObject = JsonObject>(kind: RecordKind, id: string): Promise<StoredRecord<T> | undefined> {
    // Once prepared, no await: the command is sent in the tick the operation was called.
    if (!this.isPrepared) await this.prepared();
    const { key } = recordKey(this.prefix, kind, id);
    const stored = await this.connection.run(key, ['GET', key]);
    if (typeof stored !== 'string') return undefined;
    return decodeRecord(stored) as StoredRecord<T>;
  }

  async consume(kind: RecordKind, id: string, writes: readonly RecordWrite[] = []): Promise<boolean> {
    const prepared = writes.map((w) => this.prepareWrite(w));
    if (!this.isPrepared) await this.prepared();
    const record = recordKey(this.prefix, kind, id);
    // On a cluster the whole step runs on one shard: the records written must be on the consumed one's.
    const elsewhere = prepared.find((w) => this.connection.cluster && w.record.tag !== record.tag);
    if (elsewhere)
      throw new Error(
        `consume: on Redis Cluster an attached write must carry the placement tag of the consumed id (${kind} -> ${elsewhere.record.key})`,
      );
    const keys = [record.key];
    const args = [String(prepared.length)];
    for (const w of prepared) {
      // Grant indexes on other shards first: an index naming a record that was never written is harmless.
      if (this.connection.cluster) await this.writeForeignIndexes(w, record.tag);
      const local = this.localIndexes(w, record.tag);
      keys.push(w.record.key, ...local);
      args.push(String(local.length), String(w.ttl), w.encoded, w.member);
    }
    return (await this.connection.script(CONSUME, keys, args, this.waits)) === 1;
  }

  async delete(kind: RecordKind, id: string): Promise<void> {
    if (!this.isPrepared) await this.prepared();
    // Indexes that still name the record are harmless: REVOKE deletes only records that list the grant.
    const { key } = recordKey(this.prefix, kind, id);
    await this.connection.write(key, ['DEL', key], this.waits);
  }

  /**
   * Deletes the records of the grant: reads its index, then, per shard, deletes those that still list the
   * grant (every key declared to the script). Goes round again while records were added meanwhile.
   */
  async revokeGrant(grantId: string): Promise<void> {
    if (!this.isPrepared) await this.prepared();
    const index = grantKey(this.prefix, grantId);
    for (let round = 0; round < 10; round++) {
      const members = (await this.connection.run(index.key, ['ZRANGE', index.key, '0', '-1'])) as string[];
      if (members.length === 0) return;
      const groups: Groups = new Map();
      for (const member of members)
        addTo(groups, this.connection.cluster ? tagOfMember(member) : index.tag, this.prefix + member);
      for (const [tag, keys] of groups) {
        if (tag !== index.tag) await this.connection.script(REVOKE, keys, [grantId, '0'], this.waits);
      }
      const local = groups.get(index.tag) ?? [];
      const left = await this.connection.script(REVOKE, [index.key, ...local], [grantId, '1', ...members], this.waits);
      if (left === 0) return;
    }
  }

  /** Stops the data-loss checks and quits the client the store created; an injected client stays open (its owner closes it). */
  async close(): Promise<void> {
    this.watch.stop();
    this.waits.stop();
    await this.connection.close();
  }

  /** Once per connection: the markers, and how many replicas to wait for. Retried after a failure. */
  private prepared(): Promise<void> {
    if (this.ready !== undefined) return this.ready;
    const ready: Promise<void> = this.prepare().then(
      () => {
        // Not when open() began another meanwhile: operations wait for that one.
        if (this.ready === ready) this.isPrepared = true;
      },
      (error: unknown) => {
        if (this.ready === ready) this.ready = undefined;
        throw error;
      },
    );
    this.ready = ready;
    return ready;
  }

  private async prepare(): Promise<void> {
    await this.connection.connecting();
    await this.watch.start();
    await this.waits.start();
  }

  private prepareWrite(write: RecordWrite): PreparedWrite {
    const ttl = checkTtl(write.options);
    const grants = [...new Set(write.options.grants ?? [])].map(String);
    const record = recordKey(this.prefix, write.kind, write.id);
    const indexes: Groups = new Map();
    for (const grant of grants) {
      const index = grantKey(this.prefix, grant);
      addTo(indexes, index.tag, index.key);
    }
    return {
      record,
      ttl,
      encoded: encodeRecord(write.value, grants),
      member: memberOf(this.prefix, record.key),
      indexes,
    };
  }

  /** Index keys one script may touch together with a record tagged `tag`: all of them, except on a cluster. */
  private localIndexes(write: PreparedWrite, tag: string): string[] {
    if (!this.connection.cluster) return [...write.indexes.values()].flat();
    return write.indexes.get(tag) ?? [];
  }

  /** Cluster only: grant indexes on other shards than the record, one call per hash tag, before the record. */
  private async writeForeignIndexes(write: PreparedWrite, tag: string): Promise<void> {
    if (!this.connection.cluster) return;
    for (const [other, keys] of write.indexes) {
      if (other !== tag) await this.connection.script(INDEX, keys, [String(write.ttl), write.member], this.waits);
    }
  }

  /** Writes the record (only when absent: `add`); 1 when written, else 0. */
  private async write(write: PreparedWrite, onlyIfAbsent: boolean): Promise<number> {
    if (!this.isPrepared) await this.prepared();
    if (this.connection.cluster) await this.writeForeignIndexes(write, write.record.tag);
    const { key } = write.record;
    const local = this.localIndexes(write, write.record.tag);
    if (local.length === 0) {
      // No index to update with it (a CIBA request, poll state, a marker, a jti): SET alone is the same atomic step,
      // and costs Redis less than a script.
      const args = ['SET', key, write.encoded, 'PX', String(write.ttl)];
      if (onlyIfAbsent) args.push('NX');
      return (await this.connection.write(key, args, this.waits)) === null ? 0 : 1;
    }
    const args = [String(write.ttl), write.encoded, write.member, onlyIfAbsent ? '1' : '0'];
    return Number(await this.connection.script(PUT, [key, ...local], args, this.waits));
  }
}
