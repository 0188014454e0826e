/**
 * One gateway instance as its own process, for the multi-instance tests (test/redis/two-gateways.test.ts),
 * started by test/helpers/gateway-process.ts as `node --import tsx test/helpers/gateway-main.ts`.
 *
 * The fixture's clients, subscribers, policy and mobile ranges (test/helpers/gateway.ts), the fixture's
 * issuer, a RedisStore and a real clock. Configuration from the environment:
 *   REDIS_URL              the shared Redis (required)
 *   NETAUTH_PREFIX         key prefix (default `netauth:`)
 *   NETAUTH_COOKIE_SECRET  consentPage.cookieSecret, the same on every instance (required)
 *   NETAUTH_INSTANCE       a name, sent back in an `X-Netauth-Instance` header on every response
 * Listens on 127.0.0.1:0 and writes one line `{"port":N}` to stdout once it accepts connections.
 * SIGTERM closes the server and the store, then exits.
 */
import express from 'express';
import { createNetAuth, RedisStore, StoreUnavailableError, isOAuthError } from '../../lib/index.js';
import { CLIENTS, ISSUER, MOBILE_RANGES, POLICY, PORT_HEADER, SUBSCRIBERS } from './gateway.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`gateway-main: ${name} is required\n`);
    process.exit(2);
  }
  return value;
}

const instance = process.env.NETAUTH_INSTANCE ?? String(process.pid);
const store = new RedisStore({ url: required('REDIS_URL'), prefix: process.env.NETAUTH_PREFIX ?? 'netauth:', timeout: 1000 });
const netauth = createNetAuth({
  issuer: ISSUER,
  clients: CLIENTS,
  subscribers: SUBSCRIBERS,
  consentPolicy: POLICY,
  network: { mobileRanges: MOBILE_RANGES, portHeader: PORT_HEADER },
  store,
  consentPage: { cookieSecret: required('NETAUTH_COOKIE_SECRET') },
  // Whole seconds are the smallest interval; one keeps openid-client's polling short.
  lifetimes: { pollInterval: 1 },
});

const app = express();
// The tests play the operator's edge from loopback: X-Forwarded-For carries the device address.
app.set('trust proxy', 'loopback');
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

const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});

process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  void store.close().finally(() => process.exit(0));
});
