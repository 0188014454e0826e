/**
 * Sentinel's word on which node is master, for a store behind a node-redis createSentinel() client. The client
 * follows Sentinel's announcements; between a failover and the moment it moves (or while it stays on a hung node
 * that wakes up still believing it is master) its commands reach a node Sentinel no longer names, and a write done
 * there is gone once Sentinel demotes it. So the store asks Sentinel itself (`SENTINEL GET-MASTER-ADDR-BY-NAME`
 * and `SENTINEL MASTER`, on the Sentinel the client listens to) after a command timed out or failed, after a write
 * no replica confirmed, when the client reports a new master, and every 10 s; and it refuses commands (503) while
 * the client's node is not the one Sentinel names, reports itself a replica, or is down or being failed over for
 * Sentinel. The Sentinel is asked over its own short connection, in RESP, without credentials: a Sentinel that
 * requires a password cannot be asked, and then only the client's own view counts (reported as `sentinel-quorum`,
 * once a minute).
 */
import { createConnection } from 'node:net';
import { StoreUnavailableError } from './store.js';

interface Node {
  host: string;
  port: number;
}

/** What the guard needs of a `createSentinel()` client (RedisSentinelCommandClient). */
export interface SentinelClient {
  getMasterNode(): Node | undefined;
  getSentinelNode?(): Node | undefined;
  sendCommand(isReadonly: boolean | undefined, args: string[], options?: { timeout?: number }): Promise<unknown>;
}

/** A fault of the set-up the store noticed, for `onTopologyFault` (docs/redis-store.md#faults-what-clients-see). */
export type TopologyFaultKind = 'stale-slot-map' | 'second-master' | 'sentinel-quorum';

type Reply = string | number | null | Error | Reply[];

/** One RESP2 reply of `text` (latin1: one char per byte) from `at`, and where the next begins; undefined if incomplete. */
function parse(text: string, at: number): [Reply, number] | undefined {
  const end = text.indexOf('\r\n', at);
  if (end < 0) return undefined;
  const line = text.slice(at + 1, end);
  const next = end + 2;
  switch (text[at]) {
    case '+':
      return [line, next];
    case '-':
      return [new Error(line), next];
    case ':':
      return [Number(line), next];
    case '$': {
      const length = Number(line);
      if (length < 0) return [null, next];
      return text.length < next + length + 2 ? undefined : [text.slice(next, next + length), next + length + 2];
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return [null, next];
      const items: Reply[] = [];
      let position = next;
      for (let i = 0; i < count; i++) {
        const item = parse(text, position);
        if (!item) return undefined;
        items.push(item[0]);
        position = item[1];
      }
      return [items, position];
    }
    default:
      throw new Error('not a RESP reply');
  }
}

/** Sends `commands` to `node` on a connection of its own and resolves with their replies, within `ms`. */
function query(node: Node, commands: string[][], ms: number): Promise<Reply[]> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: node.host, port: node.port });
    let text = '';
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(ms, () => fail(new Error(`no answer within ${ms} ms`)));
    socket.once('error', fail);
    socket.once('connect', () => {
      const encode = (args: string[]) =>
        `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
      socket.write(commands.map(encode).join(''));
    });
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const replies: Reply[] = [];
      let at = 0;
      try {
        while (replies.length < commands.length) {
          const reply = parse(text, at);
          if (!reply) return;
          replies.push(reply[0]);
          at = reply[1];
        }
      } catch (error) {
        fail(error as Error);
        return;
      }
      socket.destroy();
      resolve(replies);
    });
  });
}

const address = (node: Node) => `${node.host}:${node.port}`;

/** Resolves undefined after `ms` unless `promise` settles first (a rejection too resolves undefined). */
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)));
  return Promise.race([promise.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}

export class SentinelGuard {
  /** The name Sentinel monitors the client's master under (learned on the first look). */
  private name: string | undefined;
  /** The node (`host:port`) commands are refused on, and why; undefined while it is the master Sentinel names. */
  private refusal: { node: string; reason: string } | undefined;
  private looking: Promise<void> | undefined;
  private last = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: SentinelClient,
    private readonly timeout: number,
    private readonly fault: (kind: TopologyFaultKind, node: string) => void,
  ) {}

  /** Looks every `interval` ms from now on (a lost quorum fails no command: only a look finds it). */
  start(interval: number): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.verify(true), interval);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Throws StoreUnavailableError while commands are refused, and looks again (at most every 250 ms). */
  admit(): void {
    if (this.refusal === undefined) return;
    // Also when the client has moved (a failover) since the look that refused its old node: the new node is admitted
    // meanwhile and looked at, at the pace of any look.
    const refusal = this.standing();
    void this.verify();
    if (refusal !== undefined) throw new StoreUnavailableError(refusal);
  }

  /**
   * The refusal, if it is about the node the client is on (or the client is between masters). A node the client
   * moved to after that look is judged as any node is before its first look: admitted until a look refuses it.
   */
  private standing(): string | undefined {
    const on = this.client.getMasterNode();
    return on !== undefined && address(on) !== this.refusal?.node ? undefined : this.refusal?.reason;
  }

  /** Whether the client's node is, as far as Sentinel says, the master: after a look (`force`: not one of 250 ms ago). */
  async confirms(): Promise<boolean> {
    await this.verify(true);
    return this.standing() === undefined;
  }

  /** Asks Sentinel which node is master, once at a time; at most every 250 ms unless `force`. */
  verify(force = false): Promise<void> {
    if (this.looking !== undefined) return this.looking;
    if (!force && Date.now() - this.last < 250) return Promise.resolve();
    this.last = Date.now();
    this.looking = this.look().finally(() => {
      this.looking = undefined;
    });
    return this.looking;
  }

  private async look(): Promise<void> {
    const sentinel = this.client.getSentinelNode?.();
    const current = this.client.getMasterNode();
    if (sentinel === undefined) return;
    if (current === undefined) {
      // Between masters (node-redis reports a new one before it is connected): look again once it is.
      if (this.refusal !== undefined) setTimeout(() => void this.verify(true), 50).unref();
      return;
    }
    let named: Map<string, string>;
    let advertised: string | undefined;
    try {
      this.name ??= await this.nameOf(sentinel, current);
      if (this.name === undefined) return;
      const [master, quorum, addr] = await query(
        sentinel,
        [
          ['SENTINEL', 'MASTER', this.name],
          ['SENTINEL', 'CKQUORUM', this.name],
          ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name],
        ],
        this.timeout,
      );
      if (quorum instanceof Error) this.fault('sentinel-quorum', address(sentinel));
      // Field, value, field, value...
      const fields = Array.isArray(master) ? master.map(String) : [];
      named = new Map(fields.flatMap((field, i) => (i % 2 === 0 ? [[field, fields[i + 1] ?? '']] : [])));
      if (Array.isArray(addr) && addr.length === 2) advertised = `${String(addr[0])}:${String(addr[1])}`;
    } catch {
      // No Sentinel answers: no failover can happen now; the client's node is taken at its word.
      this.fault('sentinel-quorum', address(sentinel));
      return;
    }
    if (!named.has('ip') || !named.has('port')) return;
    const monitored = `${named.get('ip')}:${named.get('port')}`;
    // SENTINEL MASTER keeps the old master's address until the failover ends; GET-MASTER-ADDR-BY-NAME names the
    // promoted replica as soon as it has acknowledged the switch (what clients are told to follow). Then the flags
    // and role below describe the old master, not the node to write to.
    const master = advertised ?? monitored;
    const switched = master !== monitored;
    // Down, or being replaced: what it takes now may be gone once the failover ends.
    const failing = /s_down|o_down|failover_in_progress/.exec(named.get('flags') ?? '')?.[0];
    // The client may have moved meanwhile (a failover): then this answer may predate it, and would refuse the node it
    // moved to. Ask again instead of judging the new node by it.
    const on = this.client.getMasterNode();
    if (on === undefined) return;
    if (address(on) !== address(current)) {
      setTimeout(() => void this.verify(true), 50).unref();
      return;
    }
    const reported = named.get('role-reported') ?? 'master';
    const node = address(on);
    if (node !== master) {
      this.refusal = { node, reason: `Redis at ${node} is not the master Sentinel names (${master})` };
      // Its own word, for the report only: asked on the client's connection, behind whatever waits there (a WAIT),
      // so never on the common path.
      const reply = await within(this.client.sendCommand(false, ['ROLE'], { timeout: this.timeout }), this.timeout);
      if (Array.isArray(reply) && String(reply[0]) === 'master') this.fault('second-master', node);
    } else if (!switched && reported !== 'master') {
      // What the node itself last told Sentinel (INFO): a replica refuses writes anyway.
      this.refusal = { node, reason: `Redis at ${node} reports itself a ${reported}` };
    } else if (!switched && failing !== undefined) {
      this.refusal = { node, reason: `Redis at ${node} is ${failing} for Sentinel` };
    } else {
      this.refusal = undefined;
    }
  }

  /** The master name under which the Sentinel monitors `current` (ROLE lists the names a Sentinel monitors). */
  private async nameOf(sentinel: Node, current: Node): Promise<string | undefined> {
    const [role] = await query(sentinel, [['ROLE']], this.timeout);
    // NOAUTH: a Sentinel with a password, which this connection cannot give.
    if (role instanceof Error) throw role;
    const names = Array.isArray(role) && Array.isArray(role[1]) ? role[1].map(String) : [];
    if (names.length <= 1) return names[0];
    const addresses = await query(
      sentinel,
      names.map((name) => ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]),
      this.timeout,
    );
    const found = addresses.findIndex(
      (a) => Array.isArray(a) && `${String(a[0])}:${String(a[1])}` === address(current),
    );
    return found < 0 ? undefined : names[found];
  }
}
