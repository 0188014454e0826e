/**
 * How many replicas a write waits for, per master. Waiting (`WAIT`) is best effort: it never turns a write
 * Redis has done into an error (docs/redis-store.md, "Failover").
 *
 * The count follows the topology: each master's replicas that are online, read at start-up, whenever the client
 * reconnects or learns a new master, and every `interval` ms, capped by `waitForReplicas` (default 1). A WAIT
 * that reaches fewer replicas than that is a shortfall: counted, reported once until the master's replicas catch
 * up again, and the master's count drops to what WAIT reached, so the next writes do not wait for a replica
 * that is gone (a WAIT holds the connection it is sent on, and every command queued behind it, until it answers).
 */
import { REDIS_STORE_DEFAULTS } from '../defaults.js';

/** A write that reached fewer replicas than the store waits for. */
export interface ReplicaShortfall {
  /** `host:port` of the master, or a description of the set-up. */
  readonly node: string;
  /** Replicas the write waited for. */
  readonly expected: number;
  /** Replicas that confirmed it within the wait (0 when WAIT got no answer). */
  readonly acknowledged: number;
}

export interface ReplicaTopology {
  /** Online replicas per master (`host:port`, as `nodeOf` names it). */
  replicasPerMaster(): Promise<Map<string, number>>;
  /** Calls `listener` on every reconnect or new master; returns the unsubscribe. */
  onReconnect(listener: () => void): () => void;
}

export class ReplicaWaits {
  private readonly expected = new Map<string, number>();
  /** Masters whose last wait fell short and was reported. */
  private readonly short = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private refreshing: Promise<void> | undefined;
  /** Writes that reached fewer replicas than they waited for, since the store was made. */
  shortfalls = 0;

  constructor(
    private readonly topology: ReplicaTopology,
    /** `waitForReplicas`: at most this many; undefined for the default (1 where a master has replicas). */
    private readonly configured: number | undefined,
    private readonly report: (shortfall: ReplicaShortfall) => void,
    private readonly interval: number,
  ) {}

  /** Replicas to wait for after a write to `node`. */
  target(node: string): number {
    return this.expected.get(node) ?? 0;
  }

  /** Reads the topology now, and again on every reconnect and every `interval` ms. */
  start(): Promise<void> {
    if (this.configured === 0) return Promise.resolve();
    if (!this.timer) {
      this.timer = setInterval(() => void this.refresh().catch(() => {}), this.interval);
      this.timer.unref();
    }
    this.unsubscribe?.();
    this.unsubscribe = this.topology.onReconnect(() => void this.refresh().catch(() => {}));
    return this.refresh().catch(() => {
      // An ACL without INFO or CLUSTER NODES, or a master down: no waiting there until a later read says more.
    });
  }

  stop(): void {
    clearInterval(this.timer);
    this.unsubscribe?.();
  }

  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      const seen = await this.topology.replicasPerMaster();
      this.expected.clear();
      for (const [node, online] of seen) {
        this.expected.set(node, Math.min(online, this.configured ?? REDIS_STORE_DEFAULTS.waitForReplicas));
        // Asked for more replicas than the master has: every write falls short of the option.
        if (this.configured !== undefined && online < this.configured) this.fallShort(node, this.configured, online);
      }
    })().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** What WAIT answered after a write to `node` (-1: no answer within the wait). */
  acknowledged(node: string, expected: number, answer: number): void {
    const acknowledged = Math.max(answer, 0);
    if (acknowledged >= expected) {
      this.short.delete(node);
      return;
    }
    this.shortfalls++;
    // Until the topology is read again: the replicas that answered, not the ones that did not.
    if ((this.expected.get(node) ?? 0) > acknowledged) this.expected.set(node, acknowledged);
    this.fallShort(node, expected, acknowledged);
  }

  private fallShort(node: string, expected: number, acknowledged: number): void {
    if (this.short.has(node)) return;
    this.short.add(node);
    this.report({ node, expected, acknowledged });
  }
}
