/**
 * A real Redis Sentinel set-up on loopback for the tests (and bench/): one master, one replica and one Sentinel
 * (`redis-server <conf> --sentinel`, quorum 1) watching them under the name `netauth`. Killing the master makes
 * the Sentinel promote the replica.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisServer } from './redis-server.js';
import { ask } from './redis-cluster.js';

export const SENTINEL_MASTER_NAME = 'netauth';

export interface RedisSentinelOptions {
  /** down-after-milliseconds: how long the master may be unreachable before the Sentinel fails it over. */
  downAfter?: number;
}

export class RedisSentinelSet {
  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
    readonly sentinel: RedisServer,
  ) {}

  static async start(options: RedisSentinelOptions = {}): Promise<RedisSentinelSet> {
    const downAfter = options.downAfter ?? 1000;
    const started: RedisServer[] = [];
    try {
      // DEBUG SLEEP from loopback: bench/failover.ts's slow-master fault (Redis 7 refuses DEBUG by default).
      const debug = ['--enable-debug-command', 'local'];
      const master = await RedisServer.start({ args: () => [...debug, '--repl-diskless-sync-delay', '0'] });
      started.push(master);
      const replica = await RedisServer.start({
        args: () => [...debug, '--replicaof', '127.0.0.1', String(master.port), '--repl-diskless-sync-delay', '0'],
      });
      started.push(replica);
      const sentinel = await RedisServer.start({
        config: () => [
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${master.port} 1`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${downAfter}`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${Math.max(2000, downAfter * 2)}`,
        ],
        args: () => ['--sentinel'],
      });
      started.push(sentinel);
      const set = new RedisSentinelSet(master, replica, sentinel);
      await set.waitUntilReady();
      return set;
    } catch (error) {
      await Promise.all(started.map((s) => s.destroy()));
      throw error;
    }
  }

  /** Root nodes for `createSentinel`. */
  get sentinelRootNodes(): Array<{ host: string; port: number }> {
    return [{ host: '127.0.0.1', port: this.sentinel.port }];
  }

  /** The server the Sentinel names as master now. */
  async currentMaster(): Promise<RedisServer> {
    const [, port] = (await ask(this.sentinel, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME])) as [
      string,
      string,
    ];
    const server = [this.master, this.replica].find((s) => s.port === Number(port));
    if (!server) throw new Error(`the Sentinel names an unknown master (port ${port})`);
    return server;
  }

  /** Waits until the Sentinel knows the replica and the replica is in sync. */
  async waitUntilReady(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const replicas = (await ask(this.sentinel, ['SENTINEL', 'REPLICAS', SENTINEL_MASTER_NAME]).catch(
        () => [],
      )) as string[][];
      const master = await this.currentMaster().catch(() => undefined);
      const other = master === this.master ? this.replica : this.master;
      if (
        master?.running &&
        other.running &&
        replicas.some((fields) => fields.includes(String(other.port)) && !fields.join(',').includes('s_down'))
      ) {
        const replication = String(await ask(other, ['INFO', 'replication']).catch(() => ''));
        // The master streams writes to a new replica only once it has acknowledged the initial sync.
        const streaming = String(await ask(master, ['INFO', 'replication']).catch(() => '')).includes('state=online');
        if (replication.includes('master_link_status:up') && streaming) return;
      }
      await sleep(50);
    }
    throw new Error(`the Sentinel set-up did not become ready within ${timeoutMs} ms`);
  }

  /** Kills the current master (SIGKILL, like a crash) and returns it; the Sentinel then fails over. */
  async killMaster(): Promise<RedisServer> {
    const old = await this.currentMaster();
    await old.stop();
    return old;
  }

  /** Waits until the Sentinel names a master other than `old` and that server acts as master. */
  async waitForFailover(old: RedisServer, timeoutMs = 20_000): Promise<RedisServer> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const now = await this.currentMaster().catch(() => old);
      if (now !== old) {
        const role = (await ask(now, ['ROLE']).catch(() => [])) as unknown[];
        if (role[0] === 'master') return now;
      }
      await sleep(50);
    }
    throw new Error(`the Sentinel did not fail over within ${timeoutMs} ms`);
  }

  /** Kills the current master and waits until the Sentinel has promoted the replica. */
  async failOver(): Promise<RedisServer> {
    return this.waitForFailover(await this.killMaster());
  }

  async destroy(): Promise<void> {
    await Promise.all([this.sentinel, this.replica, this.master].map((s) => s.destroy()));
  }
}
