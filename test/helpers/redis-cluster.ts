/**
 * A real Redis Cluster on loopback for the tests (and bench/): `masters` redis-servers in cluster mode, each
 * with `replicas` replicas, joined by `redis-cli --cluster create`. Nodes can be killed (SIGKILL, like a crash)
 * to watch a replica take over.
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient, createCluster } from './node-redis.js';
import { RedisServer } from './redis-server.js';

const CLI = process.env.REDIS_CLI_BIN ?? 'redis-cli';

export interface RedisClusterOptions {
  masters?: number;
  replicas?: number;
  /**
   * cluster-node-timeout in ms: how long a master may be unreachable before its replica takes over. Short,
   * so a failover fits a test; docs/redis-store.md discusses the production value.
   */
  nodeTimeout?: number;
  /** cluster-require-full-coverage: with false, the other shards keep serving while one is down. Default true. */
  requireFullCoverage?: boolean;
}

/** One line of `CLUSTER NODES`. */
interface NodeLine {
  id: string;
  address: string;
  flags: string[];
  masterId: string;
  slots: Array<[number, number]>;
}

function parseNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
      return {
        id: id!,
        // `127.0.0.1:7000@17000` (cluster bus port after the @).
        address: address!.split('@')[0]!,
        flags: flags!.split(','),
        masterId: masterId!,
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [from, to] = s.split('-').map(Number);
            return [from!, to ?? from!] as [number, number];
          }),
      };
    });
}

async function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output}`)),
    );
  });
}

/** One command to one node, on a connection of its own. */
export async function ask(server: RedisServer, args: string[]): Promise<unknown> {
  // A dead node refuses at once on loopback; the timeout only has to outlast a loaded machine.
  const client = createClient({ url: server.url, socket: { reconnectStrategy: false, connectTimeout: 5000 } });
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.sendCommand(args);
  } finally {
    client.destroy();
  }
}

export class RedisCluster {
  private constructor(
    readonly nodes: RedisServer[],
    readonly masters: number,
  ) {}

  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 0;
    const nodeTimeout = options.nodeTimeout ?? 1000;
    const nodes = await Promise.all(
      Array.from({ length: masters * (1 + replicas) }, () =>
        RedisServer.start({
          args: () => [
            // DEBUG SLEEP from loopback: bench/failover.ts's slow-master fault (Redis 7 refuses DEBUG by default).
            '--enable-debug-command',
            'local',
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            String(nodeTimeout),
            // Any replica may take over, however long it was cut off (tests kill masters right after writes).
            '--cluster-replica-validity-factor',
            '0',
            // Replicas stay where they were put, so a test knows which master has which replica.
            '--cluster-allow-replica-migration',
            'no',
            // Replicas sync at once (the default waits 5 s for more replicas to share one transfer).
            '--repl-diskless-sync-delay',
            '0',
            '--cluster-require-full-coverage',
            options.requireFullCoverage === false ? 'no' : 'yes',
          ],
        }),
      ),
    );
    const cluster = new RedisCluster(nodes, masters);
    try {
      await run(CLI, [
        '--cluster',
        'create',
        ...nodes.map((n) => n.address),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
      await cluster.waitUntilHealthy();
    } catch (error) {
      await cluster.destroy();
      throw error;
    }
    return cluster;
  }

  /** Node addresses to give a client as root nodes. */
  get rootNodes(): Array<{ url: string }> {
    return this.nodes.map((n) => ({ url: n.url }));
  }

  /**
   * A node-redis createCluster() client for this cluster, as an application would set it up for RedisStore
   * (commands fail at once while a node is unreachable), with its error events handled. Not connected.
   */
  client(): ReturnType<typeof createCluster> {
    const client = createCluster({
      rootNodes: this.rootNodes,
      // A dead node refuses at once on loopback: the connect timeout only has to outlast a loaded machine.
      defaults: { disableOfflineQueue: true, socket: { connectTimeout: 5000, reconnectStrategy: () => 100 } },
    });
    client.on('error', () => {});
    client.on('node-error', () => {});
    return client;
  }

  /** The nodes that are running. */
  get running(): RedisServer[] {
    return this.nodes.filter((n) => n.running);
  }

  /** The cluster as one running node sees it. */
  async topology(): Promise<NodeLine[]> {
    let lastError: unknown;
    for (const node of this.running) {
      try {
        return parseNodes(String(await ask(node, ['CLUSTER', 'NODES'])));
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError ?? new Error('no cluster node is running');
  }

  /** The running server that is master of `key`'s slot. */
  async masterOf(key: string): Promise<RedisServer> {
    const slot = Number(await ask(this.running[0]!, ['CLUSTER', 'KEYSLOT', key]));
    const owner = (await this.topology()).find(
      (n) =>
        n.flags.includes('master') && !n.flags.includes('fail') && n.slots.some(([a, b]) => slot >= a && slot <= b),
    );
    const server = this.nodes.find((n) => n.address === owner?.address);
    if (!server) throw new Error(`no master serves slot ${slot}`);
    return server;
  }

  /** The running masters. */
  async masterServers(): Promise<RedisServer[]> {
    const masters = (await this.topology()).filter(
      (n) => n.flags.includes('master') && !n.flags.includes('fail') && n.slots.length > 0,
    );
    return this.nodes.filter((n) => n.running && masters.some((m) => m.address === n.address));
  }

  /**
   * Waits until every running node says `cluster_state:ok`, every slot has a master that is up, and every
   * running replica is in sync with its master.
   */
  async waitUntilHealthy(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let why = '';
    while (Date.now() < deadline) {
      why = await this.unhealthy().catch((error: unknown) => String(error));
      if (why === '') return;
      await sleep(50);
    }
    throw new Error(`the cluster did not become healthy within ${timeoutMs} ms: ${why}`);
  }

  private async unhealthy(): Promise<string> {
    for (const node of this.running) {
      const info = String(await ask(node, ['CLUSTER', 'INFO']));
      if (!info.includes('cluster_state:ok')) return `${node.address} is not ok`;
      if (!info.includes('cluster_slots_ok:16384')) return `${node.address} sees slots not ok`;
    }
    const lines = await this.topology();
    for (const line of lines.filter((l) => l.flags.includes('slave') && !l.flags.includes('fail'))) {
      const server = this.nodes.find((n) => n.address === line.address);
      if (!server?.running) continue;
      const replication = String(await ask(server, ['INFO', 'replication']));
      if (!replication.includes('master_link_status:up')) return `replica ${line.address} is not in sync`;
    }
    for (const line of lines.filter((l) => l.flags.includes('master') && !l.flags.includes('fail'))) {
      const server = this.nodes.find((n) => n.address === line.address);
      if (!server?.running) continue;
      // A master streams writes to a new replica only once the replica has acknowledged its initial sync.
      const replication = String(await ask(server, ['INFO', 'replication']));
      if (/state=(?!online)/.test(replication)) return `a replica of ${line.address} is not online yet`;
    }
    const known = lines.filter((l) => !l.flags.includes('fail') && !l.flags.includes('noaddr')).length;
    if (known < this.running.length) return 'a node has not joined yet';
    return '';
  }

  /** Kills a node (SIGKILL) and waits until a replica has taken over its slots and the cluster is ok again. */
  async failOver(server: RedisServer): Promise<void> {
    await server.stop();
    await this.waitUntilHealthy();
  }

  async destroy(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.destroy()));
  }
}
