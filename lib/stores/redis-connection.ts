/**
 * The one place that knows which kind of node-redis (v5) client RedisStore talks through, so the store itself
 * only says "run this command for this key":
 *
 * - a URL: the store creates its own client (node-redis, an optional peer dependency, is loaded only then). A URL that
 *   names a Redis Cluster node is detected (`INFO cluster`) and gets a cluster client, with the rest of the
 *   cluster discovered from that node;
 * - an injected `createClient()`, `createCluster()` or `createSentinel()` client, typed structurally below so
 *   the package does not depend on node-redis' types (test/stores/redis-clients.test.ts checks the real ones fit).
 *
 * Every command has a deadline; connection trouble, and replies that describe a passing server state, become
 * StoreUnavailableError (the gateway answers 503). A cluster client keeps its slot map until a MOVED reply, and
 * a dead master sends none: on connection errors the map is refreshed (at most every 250 ms) until the replica
 * that took over is found, so a failover heals without a restart. Behind Sentinel, commands are refused while the
 * client's node is not the master Sentinel names (lib/stores/redis-sentinel-guard.ts).
 */
import { StoreUnavailableError } from './store.js';
import type { Script } from './redis-scripts.js';
import type { ReplicaWaits } from './redis-replicas.js';
import type { RedisClientOptions, RedisClientType, RedisClusterOptions, RedisClusterType } from 'redis';
import { REDIS_STORE_DEFAULTS } from '../defaults.js';
import { requirePeer } from '../optional-peer.js';
import { TopologyRefresh } from './redis-topology.js';
import { SentinelGuard, type TopologyFaultKind } from './redis-sentinel-guard.js';

/** What RedisStore needs of a `createClient()` client. */
export interface RedisCommandClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: ReadonlyArray<string>, options?: { timeout?: number }): Promise<unknown>;
}

/** What RedisStore needs of a `createCluster()` client. */
export interface RedisClusterCommandClient {
  readonly isOpen: boolean;
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
    options?: { timeout?: number },
  ): Promise<unknown>;
  /** The slot map: each slot's shard and its master's `host:port`. */
  readonly slots: ReadonlyArray<{ readonly master: { readonly address: string } } | undefined>;
  readonly masters: ReadonlyArray<{
    readonly address: string;
    readonly host: string;
    readonly port: number;
    readonly client?: unknown;
  }>;
}

/** What RedisStore needs of a `createSentinel()` client. */
export interface RedisSentinelCommandClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(
    isReadonly: boolean | undefined,
    args: string[],
    options?: { timeout?: number; abortSignal?: AbortSignal },
  ): Promise<unknown>;
  getMasterNode(): { host: string; port: number } | undefined;
  /** The Sentinel the client listens to (asked which node is master: lib/stores/redis-sentinel-guard.ts). */
  getSentinelNode?(): { host: string; port: number } | undefined;
}

/** Any client RedisStore accepts. */
export type RedisStoreClient = RedisCommandClient | RedisClusterCommandClient | RedisSentinelCommandClient;

type Route =
  | { kind: 'single'; client: RedisCommandClient }
  | { kind: 'cluster'; client: RedisClusterCommandClient }
  | { kind: 'sentinel'; client: RedisSentinelCommandClient };

/** A listener node-redis clients accept (all three are EventEmitters). */
interface Emitter {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

// node-redis's factories without its default modules (JSON, search, ...), whose command types alone cost the
// type-check about 500 MB: the connection sends raw commands only.
type NoModules = Record<never, never>;
type SingleClient = RedisClientType<NoModules, NoModules, NoModules, 2, NoModules>;
type ClusterClient = RedisClusterType<NoModules, NoModules, NoModules, 2, NoModules>;
type OwnedClient = SingleClient | ClusterClient;
interface NodeRedis {
  createClient(options: RedisClientOptions<NoModules, NoModules, NoModules, 2, NoModules>): SingleClient;
  createCluster(options: RedisClusterOptions<NoModules, NoModules, NoModules, 2, NoModules>): ClusterClient;
}

// Error replies that describe a passing server state (or topology) rather than a bad command.
const TRANSIENT_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|OOM|TRYAGAIN|CLUSTERDOWN|NOREPLICAS|MOVED|ASK)\b/;

/** A Redis error reply (a command the server answered with an error), by name so any copy of node-redis fits. */
function isErrorReply(err: unknown): err is Error {
  let proto: unknown = err !== null && typeof err === 'object' ? Object.getPrototypeOf(err) : null;
  while (proto && proto !== Error.prototype) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true;
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}

function routeOf(client: RedisStoreClient): Route {
  if ('masters' in client && 'slots' in client) return { kind: 'cluster', client };
  if ('getMasterNode' in client) return { kind: 'sentinel', client };
  return { kind: 'single', client };
}

/** Never give up; back off up to 2 s, with jitter so many instances do not reconnect in step. */
function reconnectStrategy(retries: number): number {
  return Math.min(50 * 2 ** retries, 2000) + Math.floor(Math.random() * 100);
}

/** Redis Cluster's key hash (CRC16-CCITT/XMODEM of the hash tag, mod 16384), for keys `…{tag}` only. */
function slotOfTag(tag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(tag)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** The slot of a key: of its hash tag when it has one (every key of the store does). */
function slotOfKey(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return slotOfTag(close > open + 1 ? key.slice(open + 1, close) : key);
}

/** A URL's `host:port`, never its credentials. */
function hostOf(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
  } catch {
    return 'an unparsable url';
  }
}

function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error.message;
}

/** What one shard answered, or why it did not. */
export interface ShardAnswer {
  address: string;
  answer?: unknown;
  error?: unknown;
  /** The shard did not answer (down, or a passing state); false for an error reply such as NOPERM. */
  unavailable?: boolean;
}

/** `host:port (why)` for each shard that did not answer, for messages (never credentials). */
export function describeFailures(answers: readonly ShardAnswer[]): string {
  return answers
    .filter((a) => a.answer === undefined)
    .map((a) => `${a.address} (${reason(a.error)})`)
    .join(', ');
}

/** A command in flight: when it must have answered (performance.now() ms), and how to fail it then. */
interface InFlight {
  until: number;
  fail: (error: StoreUnavailableError) => void;
}

/**
 * One timer for every command in flight instead of one each (a timer, a promise and a race per command were a
 * measurable part of a Redis round trip's CPU). Every command gets the same timeout, so deadlines come in the order
 * commands start: the set's first entry is the next to expire, and the timer is armed for it only when it fires.
 */
class Deadlines {
  private readonly inFlight = new Set<InFlight>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly timeout: number) {}

  /** `work`'s outcome, or StoreUnavailableError once `timeout` ms have passed without one. */
  bound<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = { until: performance.now() + this.timeout, fail: reject };
      this.inFlight.add(entry);
      this.timer ??= this.arm(this.timeout);
      work.then(
        (value) => {
          this.inFlight.delete(entry);
          resolve(value);
        },
        (error: unknown) => {
          this.inFlight.delete(entry);
          reject(error);
        },
      );
    });
  }

  /**
   * Unreferenced: it must not hold a process open after its last command (it is left armed when none is in flight);
   * a command in flight has an open socket or a reconnecting client, which do.
   */
  private arm(ms: number): NodeJS.Timeout {
    return setTimeout(this.expire, ms).unref();
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    for (const entry of this.inFlight) {
      if (entry.until > now) {
        this.timer = this.arm(entry.until - now);
        return;
      }
      this.inFlight.delete(entry);
      entry.fail(new StoreUnavailableError(`Redis did not answer within ${this.timeout} ms`));
    }
  };
}

export interface RedisConnectionOptions {
  client?: RedisStoreClient;
  url?: string;
  /** Deadline of every command, and connect timeout of a created client (ms). */
  timeout: number;
  /** The longest a write waits for its replicas (ms). Default: RedisStore's. */
  replicaWait?: number;
  onError: (error: unknown) => void;
  /** A fault of the topology the store noticed (a stale slot map, a second master, no Sentinel quorum). */
  onFault?: (kind: TopologyFaultKind, node: string) => void;
}

export class RedisConnection {
  private route: Route | undefined;
  private readonly url: string | undefined;
  /** node-redis, for a connection that creates its client (loaded then: it is an optional peer dependency). */
  private readonly redis: NodeRedis | undefined;
  /** The client the connection created (closed with it), once created. */
  private owned: OwnedClient | undefined;
  /** Settles after the created client's first connection attempt (and cluster detection); commands wait for it. */
  private firstAttempt: Promise<void> | undefined;
  /** Why the first attempt failed, for open(). */
  private failure: unknown;
  private closed = false;
  /** A cluster's slot-map refresh, for the cluster client commands go through now. */
  private topology: { client: RedisClusterCommandClient; refresh: TopologyRefresh } | undefined;
  private readonly timeout: number;
  private readonly deadlines: Deadlines;
  /**
   * node-redis' own timeout, which drops a command still waiting to be written (the offline queue of a client that is
   * not ready; a cluster's node may be), where the deadline alone would leave it to run late. It costs a timer per
   * command, so the commands of a ready client, written at once, go without it.
   */
  private readonly queued: { timeout: number };
  /** Whether a created client's first connection attempt has settled (then commands need not wait for it). */
  private attempted = false;
  private readonly replicaWait: number;
  private readonly onError: (error: unknown) => void;
  private readonly onFault: (kind: TopologyFaultKind, node: string) => void;
  /** Behind Sentinel: refuses commands while the client's node is not the master Sentinel names. */
  private readonly guard: SentinelGuard | undefined;
  /** Ends the guard's listener on the Sentinel client. */
  private readonly unwatch: (() => void) | undefined;

  constructor(options: RedisConnectionOptions) {
    this.timeout = options.timeout;
    this.deadlines = new Deadlines(options.timeout);
    this.queued = { timeout: options.timeout };
    this.replicaWait = options.replicaWait ?? REDIS_STORE_DEFAULTS.replicaWait;
    this.onError = options.onError;
    this.onFault = options.onFault ?? (() => {});
    this.url = options.url;
    if (options.url !== undefined) this.redis = requirePeer<NodeRedis>('redis', 'new RedisStore({ url })');
    if (options.client) this.route = routeOf(options.client);
    if (this.route?.kind === 'sentinel') {
      const guard = new SentinelGuard(this.route.client, this.timeout, this.onFault);
      this.guard = guard;
      this.unwatch = this.onReconnect(() => void guard.verify(true));
    }
  }

  /** Whether keys are spread over shards, so one call may only touch keys of one hash tag. */
  get cluster(): boolean {
    return this.route?.kind === 'cluster';
  }

  /** Where Redis is, for messages: hosts and ports, never credentials. */
  describe(): string {
    const route = this.route;
    if (route?.kind === 'cluster') {
      return `${route.client.masters.map((m) => m.address).join(', ') || (this.url ? hostOf(this.url) : 'the given nodes')} (cluster)`;
    }
    if (route?.kind === 'sentinel') {
      const master = route.client.getMasterNode();
      return master ? `${master.host}:${master.port} (Sentinel's master)` : "the Sentinel's master";
    }
    if (this.url !== undefined) return hostOf(this.url);
    const socket = (
      route?.client as { options?: { url?: string; socket?: { host?: string; port?: number } } } | undefined
    )?.options;
    if (socket?.url) return hostOf(socket.url);
    return socket?.socket?.host ? `${socket.socket.host}:${socket.socket.port ?? 6379}` : 'the given client';
  }

  /**
   * Connects a created client and checks Redis answers as a writable master, rejecting with a message that
   * names where Redis was expected. An injected client must already be connected (its owner connects it).
   */
  async open(): Promise<void> {
    if (this.closed) throw new StoreUnavailableError('Redis store is closed');
    if (this.url === undefined && !this.route!.client.isOpen) {
      throw new StoreUnavailableError(
        `the Redis client given to RedisStore (${this.describe()}) is not connected: await client.connect() first`,
      );
    }
    // Bounded: a hung node accepts the connection and then answers nothing, not even the handshake.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, this.timeout, 'late')));
    const started = await Promise.race([this.started(), late]);
    clearTimeout(timer);
    if (started === 'late') {
      const cause = this.failure;
      const why = cause === undefined ? `no answer within ${this.timeout} ms` : reason(cause);
      throw new StoreUnavailableError(`cannot connect to Redis at ${this.describe()} (${why})`, { cause });
    }
    if (this.route?.kind === 'cluster') return this.openShards();
    let role: unknown;
    try {
      role = await this.run(undefined, ['ROLE']);
    } catch (error) {
      const cause = this.failure ?? (error as { cause?: unknown }).cause ?? error;
      throw new StoreUnavailableError(`cannot connect to Redis at ${this.describe()} (${reason(cause)})`, { cause });
    }
    if (Array.isArray(role) && role[0] !== 'master') {
      throw new StoreUnavailableError(
        `Redis at ${this.describe()} is a ${String(role[0])}, not a master: give the master's url, or a Sentinel or Cluster client`,
      );
    }
    if (this.guard) {
      this.guard.start(10_000);
      if (!(await this.guard.confirms()))
        throw new StoreUnavailableError(`Redis at ${this.describe()} is not the master Sentinel names`);
    }
  }

  /**
   * A cluster opens when one shard answers: a shard that is down (`cluster-require-full-coverage no`) costs 503s
   * for its slots only, and the store's data-loss marker is placed there when it returns.
   */
  private async openShards(): Promise<void> {
    const answers = await this.eachShard(['ROLE']);
    if (answers.some((a) => a.answer !== undefined)) return;
    const cause = answers[0]?.error;
    throw new StoreUnavailableError(`cannot reach any Redis Cluster master: ${describeFailures(answers)}`, { cause });
  }

  /** Runs a command without keys on each shard's master (one node without a cluster), each with its own outcome. */
  async eachShard(args: string[]): Promise<ShardAnswer[]> {
    const shards = this.shardTags();
    const settled = await Promise.allSettled(shards.map(({ tag }) => this.run(`{${tag}}`, args)));
    return settled.map((result, i) =>
      result.status === 'fulfilled'
        ? { address: shards[i]!.address, answer: result.value }
        : {
            address: shards[i]!.address,
            error: (result.reason as { cause?: unknown }).cause ?? result.reason,
            unavailable: result.reason instanceof StoreUnavailableError,
          },
    );
  }

  /** Closes a created client; an injected one stays open (its owner closes it). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.guard?.stop();
    this.unwatch?.();
    const client = this.owned;
    if (!client?.isOpen) return;
    // Reconnecting (or a cluster): nothing to flush that matters, and close() could wait for a reply that is not coming.
    if (!('isReady' in client) || !client.isReady) client.destroy();
    else await client.close();
  }

  /** Runs one command within the deadline, on the master of `key`'s slot (or any node without a key). */
  async run(key: string | undefined, args: string[]): Promise<unknown> {
    if (this.closed) throw new StoreUnavailableError('Redis store is closed');
    try {
      this.guard?.admit();
      // The deadline counts a created client's first connection attempt too, while it lasts.
      const starting = this.url !== undefined && !this.attempted;
      return await this.deadlines.bound(
        starting ? this.started().then(() => this.send(key, args)) : this.send(key, args),
      );
    } catch (err) {
      if (isErrorReply(err) && !TRANSIENT_REPLIES.test(err.message)) throw err;
      // node-redis follows redirections itself: one that reaches the store means its map is behind the cluster's.
      if (isErrorReply(err) && /^(MOVED|ASK)\b/.test(err.message)) this.onFault('stale-slot-map', this.describe());
      this.refreshTopology();
      if (err instanceof StoreUnavailableError) throw err;
      throw new StoreUnavailableError('Redis is unavailable', { cause: err });
    }
  }

  /**
   * EVALSHA, loading the script with EVAL when the node does not know it (new, restarted or promoted). With
   * `waits`, the write is followed by a best-effort WAIT (see `write`).
   */
  async script(script: Script, keys: string[], args: string[], waits?: ReplicaWaits): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await this.write(keys[0], ['EVALSHA', script.sha, ...tail], waits);
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
      return this.write(keys[0], ['EVAL', script.source, ...tail], waits);
    }
  }

  /**
   * A write answered once the replicas `waits` names for its master have it, or after `replicaWait` ms. WAIT is
   * sent right behind the write, on the same connection, so it costs no extra round trip and counts exactly the
   * writes sent before it. Once Redis has answered the write, nothing turns it into an error: a WAIT that fails
   * or falls short is reported to `waits` (which stops waiting for a replica that does not answer).
   */
  write(key: string | undefined, args: string[], waits?: ReplicaWaits): Promise<unknown> {
    const node = waits && this.nodeOf(key);
    const replicas = node === undefined ? 0 : waits!.target(node);
    // Nothing to wait for: no async function around the command, whose promise would cost it more ticks.
    if (replicas === 0) return this.run(key, args);
    return this.waitedWrite(key, args, waits!, node!, replicas);
  }

  private async waitedWrite(
    key: string | undefined,
    args: string[],
    waits: ReplicaWaits,
    node: string,
    replicas: number,
  ): Promise<unknown> {
    const written = this.run(key, args);
    const acked = this.run(key, ['WAIT', String(replicas), String(this.replicaWait)]).then(Number, () => -1);
    const value = await written;
    let timer: NodeJS.Timeout | undefined;
    // WAIT answers within `replicaWait` (plus a busy server's delay) unless the server stopped answering: then do
    // not hold the answer until the deadline.
    const late = new Promise<number>((resolve) => (timer = setTimeout(resolve, this.replicaWait * 5, -1)));
    const answer = await Promise.race([acked, late]);
    clearTimeout(timer);
    // First, so the writes sent meanwhile do not each hold the connection for a WAIT that falls short too.
    waits.acknowledged(node, replicas, answer);
    // No replica has it: behind Sentinel, the master may be one Sentinel has already replaced (a failover during a
    // pause or hang), and a write there is gone once it is demoted: answered as not done (503), not as done.
    if (answer < replicas && this.guard && !(await this.guard.confirms()))
      throw new StoreUnavailableError('Redis took the write on a master Sentinel no longer names');
    return value;
  }

  /** The master a key's write goes to (`host:port` on a cluster, '' otherwise); undefined when not known. */
  nodeOf(key: string | undefined): string | undefined {
    const route = this.route;
    if (route?.kind !== 'cluster') return '';
    return key === undefined ? undefined : route.client.slots[slotOfKey(key)]?.master.address;
  }

  /** Online replicas per master (by `nodeOf`'s names). */
  async replicasPerMaster(): Promise<Map<string, number>> {
    const route = this.route;
    if (route?.kind !== 'cluster') {
      const info = String(await this.run(undefined, ['INFO', 'replication']));
      return new Map([['', (info.match(/^slave\d+:.*state=online/gm) ?? []).length]]);
    }
    const nodes = String(await this.run(undefined, ['CLUSTER', 'NODES']))
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const up = (n: string[]) => !n[2]!.includes('fail') && n[7] === 'connected';
    const counts = new Map<string, number>();
    for (const master of nodes.filter((n) => n[2]!.includes('master') && up(n) && n.length > 8)) {
      counts.set(master[1]!.split('@')[0]!, nodes.filter((n) => n[3] === master[0] && up(n)).length);
    }
    return counts;
  }

  /**
   * One hash tag per shard (Redis Cluster: per master, by the slot map; otherwise one), with the shard's
   * address: where to keep one marker key per shard.
   */
  shardTags(): Array<{ tag: string; address: string }> {
    const route = this.route;
    if (route?.kind !== 'cluster') return [{ tag: '0', address: this.describe() }];
    const wanted = new Set(route.client.masters.map((m) => m.address));
    const found: Array<{ tag: string; address: string }> = [];
    for (let i = 0; wanted.size > 0 && i < 10_000; i++) {
      const address = route.client.slots[slotOfTag(String(i))]?.master.address;
      if (address !== undefined && wanted.delete(address)) found.push({ tag: String(i), address });
    }
    return found;
  }

  /** Calls `listener` whenever the client (re)connects to a node or learns a new master. Returns the unsubscribe. */
  onReconnect(listener: () => void): () => void {
    const route = this.route;
    const emitter = route?.client as Partial<Emitter> | undefined;
    if (!emitter || typeof emitter.on !== 'function' || typeof emitter.off !== 'function') return () => {};
    const event = route!.kind === 'cluster' ? 'node-ready' : route!.kind === 'sentinel' ? 'topology-change' : 'ready';
    emitter.on(event, listener);
    return () => emitter.off!(event, listener);
  }

  private send(key: string | undefined, args: string[]): Promise<unknown> {
    const route = this.route!;
    switch (route.kind) {
      case 'cluster':
        return route.client.sendCommand(key, false, args, this.queued);
      case 'sentinel':
        // The client stays "ready" while its master is gone, holding commands until it has found the new one. A
        // signal started now, not when the command is handed to the new master's connection, drops those whose
        // deadline has passed (their callers got 503): sent late, each write with its WAIT blocked the new master,
        // which has no replica yet, 100 ms at a time (the kill drill's window went from 3 to 6-9 s).
        return route.client.sendCommand(false, args, { abortSignal: AbortSignal.timeout(this.timeout) });
      default:
        return route.client.sendCommand(args, route.client.isReady ? undefined : this.queued);
    }
  }

  /**
   * A cluster client learns a new slot map only from a MOVED reply, which a dead or hung master never sends: after
   * a failed command, ask the cluster again, of a master that answers (lib/stores/redis-topology.ts).
   */
  private refreshTopology(): void {
    const route = this.route;
    // Behind Sentinel: ask it whether the client is still on the master it names (the guard refuses otherwise).
    if (route?.kind === 'sentinel') void this.guard?.verify();
    if (route?.kind !== 'cluster' || this.closed) return;
    if (this.topology?.client !== route.client) {
      const stale = (node: string) => this.onFault('stale-slot-map', node);
      this.topology = {
        client: route.client,
        refresh: new TopologyRefresh(route.client, this.timeout, this.onError, stale),
      };
    }
    this.topology.refresh.refresh();
  }

  /**
   * Settles once a created client made its first connection attempt (and found a cluster behind the URL), so the
   * client listeners are attached to is the one commands go through. Never rejects.
   */
  async connecting(): Promise<void> {
    await this.started();
  }

  /**
   * For a created client: its first connection attempt, started once (on open() or the first command); settled at
   * once for a client the caller connected.
   */
  private started(): Promise<void> {
    if (this.url === undefined) return Promise.resolve();
    this.firstAttempt ??= this.connectOwned()
      .catch((error: unknown) => {
        this.failure ??= error;
      })
      .finally(() => {
        this.attempted = true;
      });
    return this.firstAttempt;
  }

  private async connectOwned(): Promise<void> {
    const redis = this.redis!;
    const client = redis.createClient({
      url: this.url!,
      // Fail fast while disconnected instead of queueing: the caller answers 503 and the client retries.
      disableOfflineQueue: true,
      socket: { connectTimeout: this.timeout, reconnectStrategy },
    });
    client.on('error', (error: unknown) => {
      this.failure = error;
      this.onError(error);
    });
    this.owned = client;
    this.route = { kind: 'single', client: client as unknown as RedisCommandClient };
    client.on('ready', () => {
      this.failure = undefined;
      // A server that was down at start-up may turn out to be a cluster node once it answers.
      if (this.owned === client) this.detectCluster(redis, client).catch(this.onError);
    });
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: unknown) => {
        client.off('ready', settle);
        client.off('error', settle);
        if (error === undefined) resolve();
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      client.on('ready', settle);
      client.on('error', settle);
      // Failures are retried by the reconnect strategy and reported through 'error'.
      client.connect().catch(() => {});
    });
    await this.detectCluster(redis, client);
  }

  private detecting: Promise<void> | undefined;

  /** A URL that names a Redis Cluster node: replace the plain client by a cluster client started from it. */
  private detectCluster(redis: NodeRedis, client: SingleClient): Promise<void> {
    this.detecting ??= (async () => {
      const info = String(await client.sendCommand(['INFO', 'cluster']));
      if (!/cluster_enabled:1/.test(info)) return;
      const url = new URL(this.url!);
      const cluster = redis.createCluster({
        rootNodes: [{ url: this.url! }],
        // connect() only discovers the slot map; each master is connected on first use, so a master that is
        // down at start-up costs 503s for its slots only, not a connect() that never returns.
        minimizeConnections: true,
        defaults: {
          ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
          ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
          disableOfflineQueue: true,
          socket:
            url.protocol === 'rediss:'
              ? { tls: true, connectTimeout: this.timeout, reconnectStrategy }
              : { connectTimeout: this.timeout, reconnectStrategy },
        },
      });
      cluster.on('error', this.onError);
      cluster.on('node-error', this.onError);
      await cluster.connect();
      if (this.closed) {
        cluster.destroy();
        return;
      }
      this.owned = cluster;
      this.route = { kind: 'cluster', client: cluster as unknown as RedisClusterCommandClient };
      client.destroy();
    })().catch((error: unknown) => {
      // Tried again on the next 'ready'.
      this.detecting = undefined;
      throw error;
    });
    return this.detecting;
  }
}
