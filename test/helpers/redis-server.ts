import { afterAll, beforeAll } from 'vitest';
import { RedisStore, type RedisStoreOptions } from '../../lib/index.js';
/**
 * A real redis-server for the tests (and for the bench's Redis rows): started on a free loopback port with no persistence and its own
 * temp dir, and able to stop and start again on the same port (to test "Redis went away").
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const BINARY = process.env.REDIS_SERVER_BIN ?? 'redis-server';

/** A key prefix no other test uses, so tests sharing one Redis never see each other's keys. */
export function freshPrefix(name = 'netauth-test'): string {
  return `${name}:${randomUUID()}:`;
}

/** Why Redis tests cannot run here, or undefined when redis-server is available. */
export function redisServerMissing(): string | undefined {
  const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    return `redis-server not found (tried "${BINARY}"; install it or set REDIS_SERVER_BIN)`;
  }
  return undefined;
}

/**
 * Whether a file's Redis tests skip: only when redis-server is missing and not under CI=true (CI installs
 * it, so there a missing server must fail the run). Call `requireRedisServer()` in the suite's beforeAll.
 */
export function skipRedisTests(what: string): boolean {
  const missing = redisServerMissing();
  const skip = missing !== undefined && process.env.CI !== 'true';
  if (skip) console.warn(`Skipping ${what}: ${missing}`);
  return skip;
}

/** Throws (failing the suite) when redis-server is missing: reached only under CI=true, where the tests must run. */
export function requireRedisServer(): void {
  const missing = redisServerMissing();
  if (missing) throw new Error(`${missing}; with CI=true the Redis tests must run`);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port from the OS');
  return address.port;
}

/** True once the server answers PING with PONG (not LOADING, not refused). */
/** Whether the server on `port` answers PING. */
function pings(port: number): Promise<boolean> {
  return ask(port, 'PING', (reply) => (reply.includes('\r\n') ? reply.startsWith('+PONG') : undefined));
}

/**
 * The process id of the server on `port` (INFO server), or undefined if it does not say within a second. Two test
 * files started in parallel may pick the same free port (or one may take a port another stopped for a moment):
 * the loser's own redis-server then fails to bind while the winner's answers its PING, and the test would run
 * against another file's server.
 */
function processIdAt(port: number): Promise<number | undefined> {
  return ask(port, 'INFO server', (reply) => {
    if (reply.startsWith('-')) return Number.NaN;
    const found = /\r\nprocess_id:(\d+)\r\n/.exec(reply);
    return found ? Number(found[1]) : undefined;
  }).then((pid) => (pid === false || Number.isNaN(pid) ? undefined : pid));
}

/** Sends one inline command and reads until `answer` decides (undefined: read on), for a second at most. */
function ask<T>(port: number, command: string, answer: (reply: string) => T | undefined): Promise<T | false> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (value: T | false) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      const decided = answer(reply);
      if (decided !== undefined) done(decided);
    });
  });
}

// Servers still running when the test process exits are killed, so none outlive a crashed run.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface RedisServerOptions {
  /** Arguments after the defaults (a later option wins), e.g. `['--cluster-enabled', 'yes']`. */
  args?: (server: RedisServer) => string[];
  /**
   * Lines of a config file written to the server's dir once and given first: a Sentinel needs a file it can
   * rewrite (`{ config: …, args: () => ['--sentinel'] }`), and a restart must find what it wrote.
   */
  config?: (server: RedisServer) => string[];
}

export class RedisServer {
  private child: ChildProcess | undefined;
  private output = '';

  private constructor(
    readonly port: number,
    /** The server's own temp dir (data and config files). */
    readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  /** Starts a server on a free port; retries on another port if the chosen one was taken meanwhile. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      const server = new RedisServer(await freePort(), mkdtempSync(join(tmpdir(), 'netauth-redis-')), options);
      try {
        await server.restart();
        return server;
      } catch (err) {
        lastError = err;
        await server.destroy();
      }
    }
    throw lastError;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** `127.0.0.1:<port>`, as Redis names its nodes. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Everything the server printed since it was last started. */
  get log(): string {
    return this.output;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** The server's process id while it runs (bench/run.ts pins it to the servers' core). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** (Re)starts the server on its port and waits until it answers PING. */
  async restart(): Promise<void> {
    if (this.child) return;
    this.output = '';
    const config = join(this.dir, 'redis.conf');
    if (this.options.config && !existsSync(config)) writeFileSync(config, `${this.options.config(this).join('\n')}\n`);
    const child = spawn(
      BINARY,
      [
        ...(this.options.config ? [config] : []),
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
        ...(this.options.args?.(this) ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    running.add(child);
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    let exited = false;
    child.once('exit', () => {
      exited = true;
      running.delete(child);
      if (this.child === child) this.child = undefined;
    });
    for (let i = 0; i < 200; i++) {
      if (exited) break;
      if (await pings(this.port)) {
        // Ours, not another test file's server on the same port (then this one failed to bind: start() moves on).
        const pid = await processIdAt(this.port);
        if (pid === undefined || pid === child.pid) return;
        break;
      }
      await sleep(25);
    }
    await this.stop();
    throw new Error(`redis-server did not start on port ${this.port}:\n${this.output}`);
  }

  /** Stops the server (connections drop, data is gone) and waits for the process to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // SIGKILL: like a crash, and nothing to save anyway (no persistence).
    child.kill('SIGKILL');
    await exited;
  }

  /** Stops the server and removes its temp dir. */
  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A describe block's Redis server (`useRedisServer`): its URL, and stores opened on it. */
export interface BlockRedis {
  /** The server, once the block's `beforeAll` started it. */
  server(): RedisServer;
  /** A RedisStore on the server (it connects at its first operation or `open()`), with a fresh prefix unless one is given; closed after the block. */
  store(options?: Omit<RedisStoreOptions, 'url'>): RedisStore;
}

/** In a describe block: a Redis server for the block's tests, and the stores they open on it, all closed after them. */
export function useRedisServer(): BlockRedis {
  let server: RedisServer | undefined;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    requireRedisServer();
    server = await RedisServer.start();
  }, 30_000);
  afterAll(async () => {
    for (const store of stores.splice(0)) await store.close();
    await server?.destroy();
  });
  const started = (): RedisServer => {
    if (server === undefined) throw new Error("useRedisServer: the server is started before the block's tests");
    return server;
  };
  return {
    server: started,
    store(options = {}) {
      const store = new RedisStore({ prefix: freshPrefix(), ...options, url: started().url });
      stores.push(store);
      return store;
    },
  };
}

/**
 * In a describe block: a Redis server and a RedisStore opened on it (a fresh prefix) for the block's tests, both
 * closed after them. The store is read when a test runs: `createTestGateway({ store: redis() })`.
 */
export function useRedisStore(): () => RedisStore {
  const redis = useRedisServer();
  let store: RedisStore | undefined;
  beforeAll(async () => {
    store = redis.store();
    await store.open();
  }, 30_000);
  return () => {
    if (store === undefined) throw new Error("useRedisStore: the store is opened before the block's tests");
    return store;
  };
}
