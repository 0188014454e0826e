/**
 * Every server the bench can start. A row of the table is a server entry run under a workload (bench/plan.ts);
 * a new row is a new entry here (plus, for a new kind of server, a file beside this one).
 */
import type { ServerParams } from '../workloads.js';
import { SIM_SWAP_SCOPE } from './canned.js';

export interface ServerEntry {
  /** Key used by bench/plan.ts and the JSON output. */
  id: string;
  /** Label in the table. */
  label: string;
  /** Entry file in bench/servers/. */
  file: string;
  env?: Record<string, string>;
  /** Needs the loopback redis-server bench/run.ts starts (its URL comes in as BENCH_REDIS_URL). */
  needsRedis?: boolean;
  /** Signs an ID token per flow: after each window the server times one signature, made its own way. */
  signs?: boolean;
  params: ServerParams;
}

const NETAUTH_PARAMS: ServerParams = {
  flowScope: SIM_SWAP_SCOPE,
  pendingScope: 'dpv:FraudPreventionAndDetection#device-location',
};

export const SERVERS: Record<string, ServerEntry> = {
  netauth: { id: 'netauth', label: 'express-netauth (memory)', file: 'netauth.ts', params: NETAUTH_PARAMS },
  'netauth-pending': {
    id: 'netauth-pending',
    label: 'express-netauth, 100k pending',
    file: 'netauth.ts',
    env: { BENCH_VARIANT: 'pending' },
    params: NETAUTH_PARAMS,
  },
  'netauth-soak': {
    id: 'netauth-soak',
    label: 'express-netauth (soak, 5 s lifetimes)',
    file: 'netauth.ts',
    env: { BENCH_VARIANT: 'soak' },
    params: NETAUTH_PARAMS,
  },
  // RedisStore on the loopback redis-server that bench/run.ts starts (needsRedis: BENCH_REDIS_URL is set then).
  'netauth-redis': {
    id: 'netauth-redis',
    label: 'express-netauth (Redis)',
    file: 'netauth.ts',
    env: { BENCH_STORE: 'redis' },
    needsRedis: true,
    params: NETAUTH_PARAMS,
  },
  // The defaults a user gets: every rate limit on (memory counters), with budgets no bench flow reaches, so their
  // cost is measured rather than their 429s.
  'netauth-limits': {
    id: 'netauth-limits',
    label: 'express-netauth, rate limits on',
    file: 'netauth.ts',
    env: { BENCH_RATE_LIMITS: 'on' },
    params: NETAUTH_PARAMS,
  },
  // The guard on RFC 9068 JWT access tokens: a signature verified per call instead of a store read.
  'netauth-jwt': {
    id: 'netauth-jwt',
    label: 'express-netauth, JWT access tokens',
    file: 'netauth.ts',
    env: { BENCH_ACCESS_TOKENS: 'jwt' },
    params: NETAUTH_PARAMS,
  },
  // Like for like with node-oidc-provider: `openid` requested, and a signed ID token in every token response, with
  // the same algorithm as the peer row it is compared with.
  'netauth-idtoken': {
    id: 'netauth-idtoken',
    label: 'express-netauth + ID token RS256',
    file: 'netauth.ts',
    signs: true,
    env: { BENCH_ID_TOKENS: 'RS256' },
    params: { ...NETAUTH_PARAMS, flowScope: `openid ${SIM_SWAP_SCOPE}` },
  },
  'netauth-idtoken-es256': {
    id: 'netauth-idtoken-es256',
    label: 'express-netauth + ID token ES256',
    file: 'netauth.ts',
    signs: true,
    env: { BENCH_ID_TOKENS: 'ES256' },
    params: { ...NETAUTH_PARAMS, flowScope: `openid ${SIM_SWAP_SCOPE}` },
  },
  'oidc-provider': {
    id: 'oidc-provider',
    label: 'node-oidc-provider 9, RS256',
    file: 'oidc-provider.ts',
    signs: true,
    // node-oidc-provider refuses a CIBA request without `openid`, and then signs an ID token per flow.
    params: { flowScope: `openid ${SIM_SWAP_SCOPE}` },
  },
  'oidc-provider-es256': {
    id: 'oidc-provider-es256',
    label: 'node-oidc-provider 9, ES256',
    file: 'oidc-provider.ts',
    signs: true,
    env: { BENCH_ID_TOKEN_ALG: 'ES256' },
    params: { flowScope: `openid ${SIM_SWAP_SCOPE}` },
  },
  'express-bare': {
    id: 'express-bare',
    label: 'bare Express 5 (ceiling)',
    file: 'express-bare.ts',
    params: { flowScope: SIM_SWAP_SCOPE },
  },
  'raw-http': {
    id: 'raw-http',
    label: 'raw node:http (runtime)',
    file: 'raw-http.ts',
    params: { flowScope: SIM_SWAP_SCOPE },
  },
};
