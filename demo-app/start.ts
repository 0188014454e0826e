/**
 * Starts the whole demo in this process: the operator gateway and the sample application, each on its own
 * loopback port. Used by `npm run demo` (main.ts) and by the tests (ports 0: any free port).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RedisStore as SessionRedisStore } from 'connect-redis';
import * as nodeRedis from 'redis';
import type { RedisClientOptions, RedisClientType } from 'redis';
import { RedisStore } from '../lib/index.js';
import type { DemoConfig } from './config.js';
import { createGateway } from './gateway.js';
import { createApplication } from './application.js';

type NoModules = Record<never, never>;
type SessionClientOptions = RedisClientOptions<NoModules, NoModules, NoModules, 2, NoModules>;
type SessionClient = RedisClientType<NoModules, NoModules, NoModules, 2, NoModules>;
// node-redis's factory typed without its default modules (JSON, search, ...): sessions need plain commands, and
// the modules' command types alone cost a type-check about 500 MB.
const createClient = nodeRedis.createClient as unknown as (options: SessionClientOptions) => SessionClient;

export interface StartOptions {
  /** Redis for both sides (gateway: the package's RedisStore; app: connect-redis). Default: memory. */
  redisUrl?: string;
  /** Receives each gateway event as one readable line. */
  log?: (line: string) => void;
}

export interface RunningDemo {
  gatewayUrl: string;
  appUrl: string;
  issuer: string;
  /** Which stores are in use, for the banner. */
  stores: 'memory' | 'redis';
  close(): Promise<void>;
}

/** A start-up problem the CLI reports as one line (port in use, Redis unreachable). */
export class DemoStartError extends Error {
  override readonly name = 'DemoStartError';
}

async function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(
        error.code === 'EADDRINUSE'
          ? new DemoStartError(
              `port ${port} (ports.${what}) is already in use: stop what uses it, or choose other ports in a config file (npm run demo -- --config my.json)`,
            )
          : new DemoStartError(`cannot listen on ${host}:${port} (ports.${what}): ${error.code ?? error.message}`),
      );
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
  return (server.address() as AddressInfo).port;
}

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export async function startDemo(config: DemoConfig, options: StartOptions = {}): Promise<RunningDemo> {
  // The servers bind loopback only: the demo's secrets are well known.
  const bindHost = config.host === 'localhost' ? '127.0.0.1' : config.host;
  const gatewayServer = createServer();
  const appServer = createServer();
  const cleanup: (() => Promise<void> | void)[] = [() => closeServer(appServer), () => closeServer(gatewayServer)];
  let closeRedis: (() => Promise<void>) | undefined;
  const close = async () => {
    for (const step of cleanup.splice(0)) await step();
  };

  try {
    // Listen first: with port 0 the URLs (issuer, redirect URI) are only known afterwards.
    const gatewayPort = await listen(gatewayServer, config.ports.gateway, bindHost, 'gateway');
    const appPort = await listen(appServer, config.ports.app, bindHost, 'app');
    const gatewayUrl = `http://${config.host}:${gatewayPort}`;
    const appUrl = `http://${config.host}:${appPort}`;

    let store: RedisStore | undefined;
    let sessionStore: SessionRedisStore | undefined;
    if (options.redisUrl) {
      // The gateway's store owns its connection. open() is the start-up check: a wrong URL or a Redis that is
      // down is one clear error now (naming the host, never the password), not a 503 at every request later.
      store = new RedisStore({
        url: options.redisUrl,
        prefix: 'netauth-demo:',
        onDataLoss: (error) => console.error(`demo: ${error.message}`),
      });
      const opened = store;
      cleanup.push(() => opened.close());
      try {
        await opened.open();
      } catch (error) {
        throw new DemoStartError(`REDIS_URL: ${error instanceof Error ? error.message : String(error)}`);
      }

      // The app's sessions (connect-redis) on a client of their own.
      let connected = false;
      const redis = createClient({
        url: options.redisUrl,
        // Fail fast while disconnected (503s) rather than queue; give up at once if the first connection fails.
        disableOfflineQueue: true,
        socket: {
          connectTimeout: 3000,
          reconnectStrategy: (retries, cause) => (connected ? Math.min(100 * 2 ** retries, 2000) : cause),
        },
      });
      redis.on('error', () => {
        // Reported through failing requests; node-redis would crash the process on an unhandled 'error'.
      });
      try {
        await Promise.race([
          redis.connect(),
          new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), 3000).unref()),
        ]);
      } catch (error) {
        if (redis.isOpen) redis.destroy();
        throw new DemoStartError(
          `cannot connect to REDIS_URL (${error instanceof Error ? error.message : String(error)})`,
        );
      }
      connected = true;
      closeRedis = () => redis.close().catch(() => redis.destroy());
      // connect-redis names the module-laden type; the object is the same client.
      const client = redis as unknown as SessionRedisStore['client'];
      sessionStore = new SessionRedisStore({ client, prefix: 'netauth-demo:sess:' });
    }

    const gateway = createGateway(config, {
      gatewayUrl,
      appUrl,
      ...(store ? { store } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
    const application = await createApplication(config, {
      appUrl,
      gatewayUrl,
      issuer: gateway.issuer,
      ...(sessionStore ? { sessionStore } : {}),
    });
    gatewayServer.on('request', gateway.app);
    appServer.on('request', application.app);
    // Stop the background checks before the servers, the gateway (its store's timer) after them.
    cleanup.unshift(() => application.close());
    cleanup.push(() => gateway.close());
    if (closeRedis) cleanup.push(closeRedis);
    closeRedis = undefined;

    return { gatewayUrl, appUrl, issuer: gateway.issuer, stores: store ? 'redis' : 'memory', close };
  } catch (error) {
    await close();
    await closeRedis?.();
    throw error;
  }
}
