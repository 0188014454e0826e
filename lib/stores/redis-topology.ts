/**
 * Rediscovery of a Redis Cluster's slot map that a hung node cannot hold. node-redis learns a new map only from a
 * MOVED reply, which a dead or hung master never sends, and its rediscovery puts no timeout on the connection it
 * opens nor on `CLUSTER SLOTS`: asked of a hung node (its port still accepts connections), it never settles, and
 * every later rediscovery waits on it. So the map is asked of a master that has just answered a PING on its own
 * connection (the first of them to answer, within the store's timeout), never of one merely connected. Left: a
 * node that hangs between its PING and the rediscovery still holds node-redis' rediscovery until it wakes.
 */

/** What the refresh needs of a cluster client (RedisClusterCommandClient, lib/stores/redis-connection.ts). */
interface ClusterMasters {
  readonly masters: ReadonlyArray<{ readonly host: string; readonly port: number; readonly client?: unknown }>;
}

/** A node's own connection (a node-redis client). */
interface NodeClient {
  readonly isReady: boolean;
  sendCommand(args: ReadonlyArray<string>): Promise<unknown>;
}

/** node-redis' slot map holder (not in its public types): `rediscover` reads only `options` of what it is given. */
interface Slots {
  rediscover(startWith: { options: { socket: { host: string; port: number } } }): Promise<void>;
}

/** Rejects after `ms` unless `promise` settles first. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function connected(client: unknown): client is NodeClient {
  return (client as { isReady?: boolean } | undefined)?.isReady === true;
}

export class TopologyRefresh {
  private last = 0;
  private running = false;
  /** Which master is asked when none is connected (a client made with minimizeConnections), turn by turn. */
  private turn = 0;

  constructor(
    private readonly client: ClusterMasters,
    private readonly timeout: number,
    private readonly onError: (error: unknown) => void,
    /** No master answered, or the one asked did not give its map in time: the slot map stays stale for now. */
    private readonly onStale: (node: string) => void = () => {},
  ) {}

  /** Asks the cluster for its map again (at most every 250 ms, one at a time, bounded by the timeout). */
  refresh(): void {
    const now = Date.now();
    if (this.running || now - this.last < 250) return;
    const slots = (this.client as unknown as { _slots?: Partial<Slots> })._slots;
    if (typeof slots?.rediscover !== 'function' || this.client.masters.length === 0) return;
    this.last = now;
    this.running = true;
    this.answering()
      .then((node) => {
        if (node === undefined) {
          this.onStale('the cluster (no master answers)');
          return;
        }
        const startWith = { options: { socket: { host: node.host, port: node.port } } };
        return within((slots as Slots).rediscover(startWith), this.timeout).catch((error: unknown) => {
          this.onStale(`${node.host}:${node.port}`);
          throw error;
        });
      })
      .catch(this.onError)
      .finally(() => {
        this.running = false;
      });
  }

  /** The first connected master to answer a PING within the timeout; one in turn when none is connected. */
  private async answering(): Promise<{ host: string; port: number } | undefined> {
    const masters = this.client.masters;
    const open = masters.filter((m) => connected(m.client));
    if (open.length === 0) return masters[this.turn++ % masters.length];
    try {
      return await Promise.any(
        open.map((m) => within((m.client as NodeClient).sendCommand(['PING']), this.timeout).then(() => m)),
      );
    } catch {
      // None answers (all hung): asking one of them would hang the rediscovery; the next failure tries again.
      return undefined;
    }
  }
}
