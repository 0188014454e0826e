/**
 * A gateway in its own process, for tests that cross process boundaries. Reads its setup from
 * NETAUTH_TEST_SETUP (JSON), listens on 127.0.0.1:0 and prints `LISTENING <port>` on stdout.
 * Loopback is the "mobile network" here: 127.0.0.1 is Alice's line.
 */
import express from 'express';
import type { AddressInfo } from 'node:net';
import { createNetAuth, type RegisteredClient } from '../../lib/index.js';
import { POLICY, SUBSCRIBERS } from './gateway.js';

interface Setup {
  clients: RegisteredClient[];
}

const setup = JSON.parse(process.env.NETAUTH_TEST_SETUP ?? '{}') as Setup;
const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const port = (server.address() as AddressInfo).port;
  const netauth = createNetAuth({
    issuer: `http://127.0.0.1:${port}/apigateway`,
    clients: setup.clients,
    subscribers: SUBSCRIBERS.map((s) => (s.id === 'sub-alice' ? { ...s, addresses: [...(s.addresses ?? []), '127.0.0.1'] } : s)),
    consentPolicy: POLICY,
    network: { mobileRanges: ['127.0.0.0/8', '10.20.0.0/16'] },
    lifetimes: { pollInterval: 1 },
  });
  app.use('/apigateway', netauth.router);
  app.post('/sim-swap/check', netauth.guard({ scope: 'sim-swap' }), (req, res) => {
    res.json({ swapped: false, subscriber: req.netauth?.subscriber.id });
  });
  process.stdout.write(`LISTENING ${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
