/**
 * express-netauth, mounted as a gateway would mount it: the router at the issuer path and a service API
 * behind the guard. BENCH_VARIANT picks lifetimes:
 * - `default`: docs/protocol.md's lifetimes. The first poll of an approved request takes the token whatever the
 *   interval (slow_down is measured from a previous poll), so the flow measured is bc-authorize then one poll.
 * - `pending`: the same, with auth_req_ids living 15 min, so the 100,000 pending ones of workload 4 stay
 *   pending for the whole run.
 * - `soak`: 5 s lifetimes everywhere, so the live state reaches its steady size within seconds and any RSS
 *   growth during the 60 s soak is a leak, not live tokens.
 * BENCH_STORE picks the store: `memory` (default) or `redis` (RedisStore on BENCH_REDIS_URL, the loopback
 * redis-server bench/run.ts starts for the Redis row, or one node of its Redis Cluster: the store finds the rest).
 * BENCH_RATE_LIMITS=on: every default rate limit on, with budgets no bench flow reaches, so their cost is measured
 * (the redis suite); otherwise off, as in the other rows.
 * BENCH_ACCESS_TOKENS=jwt: RFC 9068 JWT access tokens, signed with an RS256 key made at start-up (the algorithm of
 * the development key a deployment without `signingKeys` gets), so the guard verifies a signature per call.
 *
 * The frontend flow (workload 2) identifies the device by its address: `trust proxy` believes the loopback
 * hop (the load generator, standing in for the operator's edge) and its `X-Forwarded-For: 10.20.0.1`, which
 * lies in `network.mobileRanges` and maps to the bench subscriber.
 */
import http from 'node:http';
import type { JsonWebKey } from 'node:crypto';
import express from 'express';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type * as Package from '../../lib/index.js';
import type { Lifetimes, Store } from '../../lib/index.js';
import {
  BENCH_CLIENT_ID,
  BENCH_CLIENT_SECRET,
  BENCH_DEVICE_IP,
  BENCH_MOBILE_RANGE,
  BENCH_PHONE,
  BENCH_REDIRECT_URI,
  ISSUER_PATH,
  quietOnError,
  serve,
} from './common.js';
import { nodeCryptoSignature } from './signature-cost.js';

// The compiled package (bench/run.ts builds dist/ first), as users run it; the types are the sources'.
const { createNetAuth, RedisStore } = (await import(
  new URL('../../dist/lib/index.js', import.meta.url).href
)) as typeof Package;

const variant = process.env.BENCH_VARIANT ?? 'default';
const lifetimes: Record<string, Lifetimes> = {
  default: {},
  pending: { authReqId: 900 },
  soak: { authReqId: 5, accessToken: 5, expiredRetention: 1 },
};
const chosen = lifetimes[variant];
if (!chosen) throw new Error(`unknown BENCH_VARIANT ${variant}`);

async function createStore(): Promise<Store | undefined> {
  const kind = process.env.BENCH_STORE ?? 'memory';
  if (kind === 'memory') return undefined; // createNetAuth's default MemoryStore
  if (kind === 'redis') {
    const url = process.env.BENCH_REDIS_URL;
    if (!url)
      throw new Error('BENCH_STORE=redis needs BENCH_REDIS_URL (bench/run.ts starts a redis-server and sets it)');
    const redis = new RedisStore({ url, onError: quietOnError('netauth-redis') });
    // Connected before the server reports ready, so the first measured requests do not pay for it.
    await redis.open();
    return redis;
  }
  throw new Error(`unknown BENCH_STORE ${kind}`);
}

const store = await createStore();
// BENCH_RATE_LIMITS=on: every limit of the defaults, counted as usual, with budgets one client and one subscriber
// never reach here (the defaults would answer this load generator's thousands of flows a second with 429).
const unreachable = { points: 1_000_000_000, duration: 60 };
const rateLimits =
  process.env.BENCH_RATE_LIMITS === 'on'
    ? {
        authorize: { perAddress: unreachable },
        bcAuthorize: { perClient: unreachable, perClientAndSubscriber: unreachable, perSubscriber: unreachable },
        token: { perClient: unreachable, perClientAndSubscriber: unreachable, perSubscriber: unreachable },
      }
    : false;
// BENCH_ID_TOKENS=RS256 or ES256: a key of that algorithm made at start-up (as node-oidc-provider's keystore in the
// peer rows) signs an ID token per flow.
const idTokenAlg = process.env.BENCH_ID_TOKENS;
if (idTokenAlg !== undefined && idTokenAlg !== 'RS256' && idTokenAlg !== 'ES256')
  throw new Error(`unknown BENCH_ID_TOKENS ${idTokenAlg}`);
const jwtAccessTokens = process.env.BENCH_ACCESS_TOKENS === 'jwt';
if (jwtAccessTokens && idTokenAlg !== undefined) throw new Error('BENCH_ACCESS_TOKENS=jwt is a row without ID tokens');
const keyAlg = idTokenAlg ?? (jwtAccessTokens ? 'RS256' : undefined);
async function signingKeyOf(alg: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), alg, kid: `bench-${alg.toLowerCase()}` };
}
const signingKeys = keyAlg ? [await signingKeyOf(keyAlg)] : undefined;
const netauth = createNetAuth({
  // NODE_ENV=production is for Express; most rows measure without keys of their own (a development key).
  mode: 'development',
  issuer: `http://127.0.0.1${ISSUER_PATH}`,
  clients: [
    {
      clientId: BENCH_CLIENT_ID,
      name: 'Bench client',
      clientSecret: BENCH_CLIENT_SECRET,
      redirectUris: [BENCH_REDIRECT_URI],
      grantTypes: ['urn:openid:params:grant-type:ciba', 'authorization_code'],
      scopes: ['dpv:FraudPreventionAndDetection#sim-swap', 'dpv:FraudPreventionAndDetection#device-location'],
    },
  ],
  subscribers: [{ id: 'sub-bench-1', phoneNumber: BENCH_PHONE, addresses: [BENCH_DEVICE_IP] }],
  // Workload 2: the device address (X-Forwarded-For from the loopback "edge") is on the mobile network.
  network: { mobileRanges: [BENCH_MOBILE_RANGE] },
  consentPolicy: [
    // Legitimate interest: no consent needed, so a bc-authorize is approved at once (workload 1).
    { purpose: 'FraudPreventionAndDetection', scope: 'sim-swap', basis: 'legitimate-interest' },
    // Consent needed and never given: these auth_req_ids stay pending (workload 4).
    { purpose: 'FraudPreventionAndDetection', scope: 'device-location', basis: 'consent' },
  ],
  ...(store ? { store } : {}),
  lifetimes: chosen,
  // Off in the rows compared with the peer and with bare Express, which have none; the rate-limits row and the redis
  // suite measure their cost (BENCH_RATE_LIMITS=on).
  rateLimits,
  ...(idTokenAlg ? { idTokens: true, signingKeys, pairwiseSalt: 'bench-salt' } : {}),
  ...(jwtAccessTokens ? { accessTokenFormat: 'jwt' as const, signingKeys, pairwiseSalt: 'bench-salt' } : {}),
  onError: quietOnError('netauth'),
});

const app = express();
// The load generator plays the operator's edge proxy on loopback; only that hop's X-Forwarded-For is believed.
app.set('trust proxy', 'loopback');
app.use(ISSUER_PATH, netauth.router);
// Workload 3: the guard in front of a trivial service-API handler.
app.post('/sim-swap/check', netauth.guard({ scope: 'sim-swap' }), (_req, res) => {
  res.json({ swapped: false });
});

serve(
  http.createServer(app),
  idTokenAlg && signingKeys ? nodeCryptoSignature(signingKeys[0] as JsonWebKey, idTokenAlg) : undefined,
);
