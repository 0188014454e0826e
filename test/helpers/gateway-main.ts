/**
 * One gateway instance as its own process, for the multi-instance tests (test/stores/redis-two-gateways.test.ts),
 * started by test/helpers/gateway-process.ts as `node --import tsx test/helpers/gateway-main.ts`.
 *
 * The fixture's clients, subscribers, policy and mobile ranges (test/helpers/gateway.ts), the fixture's
 * issuer, a RedisStore and a real clock. Configuration from the environment:
 *   REDIS_URL              the shared Redis (a server, or any node of a Redis Cluster); without it and the two
 *                          below: a MemoryStore, one instance
 *   REDIS_CLUSTER          node URLs, comma-separated: a node-redis createCluster() client instead
 *   REDIS_SENTINEL         `<master name>@<host>:<port>,…`: a node-redis createSentinel() client instead
 *   NETAUTH_PREFIX         key prefix (default `netauth:`)
 *   NETAUTH_COOKIE_SECRET  consentPage.cookieSecret, the same on every instance (required with Redis)
 *   NETAUTH_INSTANCE       a name, sent back in an `X-Netauth-Instance` header on every response
 *   NETAUTH_CLIENTS        JSON list of clients instead of the fixture's
 *   NETAUTH_RATE_LIMITS    `off`: no rate limits (load tests run many flows of one subscriber)
 *   NETAUTH_LOOPBACK       `1`: the issuer is this process's own http://127.0.0.1:<port>/apigateway and
 *                          loopback is Alice's mobile line (for a real browser-like client on this machine)
 * Opens the store first (a Redis that cannot be reached stops the start), listens on 127.0.0.1:0 and writes
 * one line `{"port":N}` to stdout once it accepts connections; later, a line `{"dataLoss":"<shard>"}` for each
 * loss of the store's data the store reports. SIGTERM closes the server and the store, then exits.
 */
import express from 'express';
import { createCluster, createSentinel } from './node-redis.js';
import {
  createNetAuth,
  MemoryStore,
  RedisStore,
  StoreUnavailableError,
  isOAuthError,
  type RegisteredClient,
  type RedisStoreClient,
} from '../../lib/index.js';
import { CLIENTS, ISSUER, MOBILE_RANGES, POLICY, PORT_HEADER, SUBSCRIBERS } from './gateway.js';
import { KEY_A } from './keys.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`gateway-main: ${name} is required\n`);
    process.exit(2);
  }
  return value;
}

/** A node-redis cluster or sentinel client from the environment, connected; undefined without one. */
async function injectedClient(): Promise<(RedisStoreClient & { destroy(): unknown }) | undefined> {
  const ignore = () => {};
  const socket = { connectTimeout: 1000, reconnectStrategy: () => 100 };
  if (process.env.REDIS_CLUSTER) {
    const cluster = createCluster({
      rootNodes: process.env.REDIS_CLUSTER.split(',').map((url) => ({ url })),
      defaults: { disableOfflineQueue: true, socket },
    });
    cluster.on('error', ignore).on('node-error', ignore);
    return cluster.connect();
  }
  if (process.env.REDIS_SENTINEL) {
    const [name, nodes] = process.env.REDIS_SENTINEL.split('@') as [string, string];
    const sentinel = createSentinel({
      name,
      sentinelRootNodes: nodes
        .split(',')
        .map((node) => ({ host: node.split(':')[0]!, port: Number(node.split(':')[1]) })),
      nodeClientOptions: { disableOfflineQueue: true, socket },
    });
    sentinel.on('error', ignore);
    return sentinel.connect();
  }
  return undefined;
}

const instance = process.env.NETAUTH_INSTANCE ?? String(process.pid);
const injected = await injectedClient();
const redis = injected !== undefined || Boolean(process.env.REDIS_URL);
const storeOptions = {
  prefix: process.env.NETAUTH_PREFIX ?? 'netauth:',
  timeout: 1000,
  onDataLoss: (error: { shard: string }) => process.stdout.write(`${JSON.stringify({ dataLoss: error.shard })}\n`),
};
const store = injected
  ? new RedisStore({ client: injected, ...storeOptions })
  : redis
    ? new RedisStore({ url: required('REDIS_URL'), ...storeOptions })
    : new MemoryStore();
// The start-up check: a Redis that cannot be reached is a clear error now, not 503s later.
if (store instanceof RedisStore) await store.open();
const loopback = process.env.NETAUTH_LOOPBACK === '1';
const clients = process.env.NETAUTH_CLIENTS ? (JSON.parse(process.env.NETAUTH_CLIENTS) as RegisteredClient[]) : CLIENTS;

const app = express();
// Listen first (the loopback issuer names the port), but report the port only once every route is mounted.
const server = app.listen(0, '127.0.0.1');
const port = await new Promise<number>((resolve) =>
  server.once('listening', () => resolve((server.address() as { port: number }).port)),
);

const netauth = createNetAuth({
  // NODE_ENV=production is set for Express (no stack traces); the fixture's issuer, http://gateway.test, is one
  // production mode refuses. The checklist's production run: test/stores/redis-several-instances.test.ts.
  mode: 'development',
  issuer: loopback ? `http://127.0.0.1:${port}/apigateway` : ISSUER,
  clients,
  subscribers: loopback
    ? SUBSCRIBERS.map((s) => (s.id === 'sub-alice' ? { ...s, addresses: [...(s.addresses ?? []), '127.0.0.1'] } : s))
    : SUBSCRIBERS,
  consentPolicy: POLICY,
  network: { mobileRanges: loopback ? [...MOBILE_RANGES, '127.0.0.0/8'] : MOBILE_RANGES, portHeader: PORT_HEADER },
  store,
  ...(redis ? { consentPage: { cookieSecret: required('NETAUTH_COOKIE_SECRET') } } : {}),
  // The same on every instance, as production has it (and without it the gateway warns at start-up).
  pairwiseSalt: 'gateway-main-pairwise-salt',
  // ID tokens are on by default: the same key on every instance, as production has it.
  signingKeys: [KEY_A],
  // Whole seconds are the smallest interval; one keeps openid-client's polling short.
  lifetimes: {
    pollInterval: 1,
    // A test that replays a code after the window sets it short.
    ...(process.env.NETAUTH_REDEMPTION_RETRY ? { redemptionRetry: Number(process.env.NETAUTH_REDEMPTION_RETRY) } : {}),
  },
  ...(process.env.NETAUTH_RATE_LIMITS === 'off' ? { rateLimits: false } : {}),
});

// The tests play the operator's edge from loopback: X-Forwarded-For carries the device address.
if (!loopback) app.set('trust proxy', 'loopback');
app.use((_req, res, next) => {
  res.set('X-Netauth-Instance', instance);
  next();
});
app.use('/apigateway', netauth.router);
app.post('/sim-swap/check', netauth.guard({ scope: 'sim-swap' }), (req, res) => {
  res.json({ swapped: false, subscriber: req.netauth?.subscriber.id });
});
app.get('/location', netauth.guard({ scope: 'device-location' }), (req, res) => {
  res.json({ subscriber: req.netauth?.subscriber.id });
});

// TEST ONLY, never in lib/: the operator's out-of-band consent service recording a subscriber's consent
// (what approves a backend-flow request that waits for consent).
app.post('/test-admin/consent', express.json(), (req, res) => {
  const body = req.body as { clientId: string; login_hint: string; scope: string };
  netauth.consent.grant({ clientId: body.clientId, login_hint: body.login_hint, scope: body.scope }).then(
    (records) => res.json({ granted: records.map((r) => r.scope) }),
    (error: unknown) => {
      const status = error instanceof StoreUnavailableError ? 503 : isOAuthError(error) ? 400 : 500;
      res.status(status).json({ error: error instanceof Error ? error.name : 'error' });
    },
  );
});

app.post('/test-admin/consent/revoke', express.json(), (req, res) => {
  const body = req.body as { clientId: string; login_hint: string; scope: string };
  netauth.consent.revoke({ clientId: body.clientId, login_hint: body.login_hint, scope: body.scope }).then(
    (revoked) => res.json({ revoked }),
    (error: unknown) =>
      res
        .status(error instanceof StoreUnavailableError ? 503 : 500)
        .json({ error: error instanceof Error ? error.name : 'error' }),
  );
});

process.stdout.write(`${JSON.stringify({ port })}\n`);

process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  void store
    .close()
    .then(() => injected?.destroy())
    .finally(() => process.exit(0));
});
