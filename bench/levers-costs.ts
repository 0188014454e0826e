/**
 * `npx tsx bench/levers-costs.ts`: what the operator's levers (issue 43) cost Redis, counted with MONITOR on a
 * loopback redis-server: the commands one revocation sends, what issuing and using a token send for the levers'
 * markers (keys `netauth:n…`), and the bytes of one marker. One gateway on RedisStore, in this process; each figure
 * is the mean over `ROUNDS` operations run one after another. Commands sent in one tick (the subscriber's and the
 * client's markers, read together) leave in one write: node-redis pipelines them, one round trip.
 */
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import express from 'express';
import { createNetAuth, RedisStore, type NetAuth } from '../lib/index.js';
import { RedisServer } from '../test/helpers/redis-server.js';
import { createClient } from '../test/helpers/node-redis.js';
import { fmt, table } from './report.js';

const ROUNDS = 20;
const ISSUER_PATH = '/apigateway';
const CIBA = 'urn:openid:params:grant-type:ciba';
const SCOPE = 'dpv:FraudPreventionAndDetection#sim-swap';
const BASIC = `Basic ${Buffer.from('bench-app:bench-secret').toString('base64')}`;

/** Commands (not counting those scripts run) while `run` runs: all of them, and those on the markers' keys. */
async function counted(url: string, run: () => Promise<void>): Promise<{ all: number; markers: number }> {
  const monitor = createClient({ url });
  await monitor.connect();
  let all = 0;
  let markers = 0;
  await monitor.monitor((line: string) => {
    if (line.includes('[0 lua]')) return;
    all += 1;
    if (line.includes('"netauth:n')) markers += 1;
  });
  await run();
  // MONITOR's lines of the last commands may still be on their way.
  await sleep(200);
  await monitor.destroy();
  return { all: all / ROUNDS, markers: markers / ROUNDS };
}

async function gateway(url: string, format: 'opaque' | 'jwt') {
  const store = new RedisStore({ url });
  const netauth: NetAuth = createNetAuth({
    issuer: 'http://127.0.0.1/apigateway',
    clients: [{ clientId: 'bench-app', clientSecret: 'bench-secret', grantTypes: [CIBA], scopes: [SCOPE] }],
    subscribers: Array.from({ length: ROUNDS * 4 }, (_, i) => ({ id: `sub-${i}`, phoneNumber: `+3460000${1000 + i}` })),
    consentPolicy: [{ purpose: 'FraudPreventionAndDetection', scope: 'sim-swap', basis: 'legitimate-interest' }],
    accessTokenFormat: format,
    pairwiseSalt: 'bench-levers-salt',
    rateLimits: false,
    store,
  });
  const app = express();
  app.use(ISSUER_PATH, netauth.router);
  app.post('/local', netauth.guard({ scope: 'sim-swap' }), (_req, res) => void res.end());
  app.post('/store', netauth.guard({ scope: 'sim-swap', revocation: 'store' }), (_req, res) => void res.end());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const post = (path: string, body: Record<string, string>) =>
    fetch(`${origin}${ISSUER_PATH}${path}`, {
      method: 'POST',
      headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body),
    }).then((r) => r.json() as Promise<Record<string, string>>);
  const token = async (subscriber: number) => {
    const started = await post('/bc-authorize', { login_hint: `tel:+3460000${1000 + subscriber}`, scope: SCOPE });
    return (await post('/token', { grant_type: CIBA, auth_req_id: started.auth_req_id! })).access_token!;
  };
  const call = (path: string, accessToken: string) =>
    fetch(`${origin}${path}`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } });
  const close = async () => {
    server.close();
    await store.close();
  };
  return { netauth, token, call, close };
}

async function main(): Promise<void> {
  const redis = await RedisServer.start();
  const rows: string[][] = [];
  const row = (what: string, c: { all: number; markers: number }) =>
    rows.push([what, fmt(c.all, 2), fmt(c.markers, 2)]);
  try {
    for (const format of ['opaque', 'jwt'] as const) {
      const gw = await gateway(redis.url, format);
      await gw.token(ROUNDS * 4 - 1); // warm: scripts loaded, data-loss markers in place
      row(
        `${format}: CIBA flow (bc-authorize, poll issuing the token)`,
        await counted(redis.url, async () => {
          for (let i = 0; i < ROUNDS; i++) await gw.token(i);
        }),
      );
      const tokens = await Promise.all(Array.from({ length: ROUNDS }, (_, i) => gw.token(ROUNDS + i)));
      for (const t of tokens) await gw.call('/local', t); // markers read once, then from memory for 5 s
      row(
        `${format}: guard call, revocation 'local'`,
        await counted(redis.url, async () => {
          for (const t of tokens) await gw.call('/local', t);
        }),
      );
      row(
        `${format}: guard call, revocation 'store'`,
        await counted(redis.url, async () => {
          for (const t of tokens) await gw.call('/store', t);
        }),
      );
      if (format === 'opaque') {
        row(
          'subscribers.revoke (consents kept)',
          await counted(redis.url, async () => {
            for (let i = 0; i < ROUNDS; i++) await gw.netauth.subscribers.revoke(`sub-${i}`, { reason: 'sim_swap' });
          }),
        );
        row(
          'subscribers.revoke (consents withdrawn, none on record)',
          await counted(redis.url, async () => {
            for (let i = 0; i < ROUNDS; i++)
              await gw.netauth.subscribers.revoke(`sub-${ROUNDS + i}`, { reason: 'number_recycled' });
          }),
        );
        row(
          'clients.revoke',
          await counted(redis.url, async () => {
            for (let i = 0; i < ROUNDS; i++) await gw.netauth.clients.revoke(`client-${i}`, { reason: 'offboarded' });
          }),
        );
      }
      await gw.close();
    }
    const raw = createClient({ url: redis.url });
    await raw.connect();
    const bytes = await raw.sendCommand(['MEMORY', 'USAGE', 'netauth:n:{subscriber:sub-0}']);
    await raw.destroy();
    console.log(table(['per operation', 'Redis commands', 'of them on markers'], rows));
    console.log(`one marker (subscriber:sub-0): ${String(bytes)} B of Redis memory (MEMORY USAGE)`);
  } finally {
    await redis.destroy();
  }
}

await main();
