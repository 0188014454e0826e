/**
 * What `npm run bench` measures: suites of rows (server × workload) run in interleaved rounds, the pending
 * prefill of workload 4, the soak, and the targets as ratios between rows of one run.
 */
import type { WorkloadId } from './workloads.js';

export interface Suite {
  id: string;
  title: string;
  workload: WorkloadId;
  /** Row order is round order, a cycle: A B C, B C A, C A B, ... */
  servers: string[];
  /** Rows every other row is divided by, in the ratio columns. */
  references: string[];
  /** Servers that cannot run this workload, with the reason (printed under the table as n/a). */
  notApplicable?: Record<string, string>;
  /** Also print the server's event-loop delay during the window (p99 and max). */
  eventLoop?: boolean;
}

/**
 * Why node-oidc-provider has no frontend-flow row. Its authorization endpoint issues a code only for an
 * end-user session with an accountId, and it sets one only at the end of an interaction: a redirect to
 * its interaction URL, the application's login/consent step, `interactionFinished`, then the resume
 * redirect (and a session cookie), i.e. 2 more requests and a cookie jar per flow. It has no hook that
 * identifies the subscriber from the request (the device's address) at GET /authorize.
 */
export const OIDC_PROVIDER_NO_FRONTEND =
  'it issues a code only after an interaction step (redirect to its interaction URL, login via interactionFinished, ' +
  'resume with a session cookie); it cannot identify the subscriber from the network at GET /authorize';

export const SUITES: Suite[] = [
  {
    id: 'flow',
    title:
      '(1) backend flow: bc-authorize then the first token poll, memory and Redis stores; (4) the same with 100,000 pending auth_req_ids held',
    workload: 'backend-flow',
    // Each target's two rows side by side (the order is a cycle: rounds start one row later), so the two windows
    // of a ratio are seconds apart, and a change in the machine's speed between them is unlikely.
    servers: [
      'netauth-limits',
      'netauth',
      'express-bare',
      'netauth-redis',
      'raw-http',
      'netauth-pending',
      'netauth-idtoken',
      'oidc-provider',
      'netauth-idtoken-es256',
      'oidc-provider-es256',
    ],
    references: ['express-bare', 'raw-http'],
  },
  {
    id: 'frontend',
    title:
      '(2) frontend flow: GET authorize (network-identified, no consent needed) -> code from the 302 -> token (authorization_code, PKCE)',
    workload: 'frontend-flow',
    servers: ['netauth', 'express-bare', 'raw-http'],
    references: ['express-bare', 'raw-http'],
    notApplicable: {
      'oidc-provider': OIDC_PROVIDER_NO_FRONTEND,
    },
  },
  {
    id: 'guard',
    title: '(3) service-API guard: bearer check + trivial handler',
    workload: 'guard',
    servers: ['netauth-jwt', 'express-bare', 'netauth', 'raw-http'],
    references: ['express-bare', 'raw-http'],
  },
  {
    id: 'hostile',
    title:
      '(5) hostile input: every GET and POST endpoint, queries up to the head limit and bodies up to the body limit of repeated parameters',
    workload: 'hostile-params',
    servers: ['netauth'],
    references: [],
    eventLoop: true,
  },
];

/**
 * Fresh server processes per row a full run measures, and the fewest a row's median and a target's ratio are
 * judged on: processes of the same code settle in one of two speeds for their whole life (bench/README.md, "One
 * server process, two speeds"), so a median over fewer is mostly which speeds were drawn.
 */
export const MIN_PROCESSES = 6;

/** Workload 4: the server that holds the pending auth_req_ids (it also runs in the flow suite). */
export const PENDING_SERVER = 'netauth-pending';
export const SOAK_SERVER = 'netauth-soak';

export interface RatioTarget {
  kind: 'ratio';
  text: string;
  suite: string;
  row: string;
  versus: string;
  min: number;
}

export interface SoakTarget {
  kind: 'soak';
  text: string;
  /** Largest accepted growth of RSS from the soak's second quarter to its last. */
  maxGrowth: number;
}

/** The server's event loop is never held longer than this (max delay of a 10 ms timer) during a suite's windows. */
export interface LoopTarget {
  kind: 'loop';
  text: string;
  suite: string;
  row: string;
  maxMs: number;
}

/**
 * Every ratio between rows doing the same work: issue 36's goals for the two like-for-like pairs and the guard on
 * JWT access tokens, issue 46's for the backend flow on memory and on Redis; issue 18's for the rest. The ID-token
 * pairs both sign one ID token per flow with the same algorithm; bare Express does no OAuth work at all, so its
 * ratio is the package's own cost.
 */
export const TARGETS: Array<RatioTarget | SoakTarget | LoopTarget> = [
  {
    kind: 'ratio',
    text: 'like for like, ES256 ID token per flow: >= 1.5x node-oidc-provider (ES256)',
    suite: 'flow',
    row: 'netauth-idtoken-es256',
    versus: 'oidc-provider-es256',
    min: 1.5,
  },
  {
    kind: 'ratio',
    text: 'like for like, RS256 ID token per flow: >= 1.4x node-oidc-provider (RS256)',
    suite: 'flow',
    row: 'netauth-idtoken',
    versus: 'oidc-provider',
    min: 1.4,
  },
  {
    kind: 'ratio',
    text: 'backend flow without ID tokens >= 0.88x bare Express',
    suite: 'flow',
    row: 'netauth',
    versus: 'express-bare',
    min: 0.88,
  },
  // Issue 46: the row an operator runs (several instances share a Redis), against the same ceiling.
  {
    kind: 'ratio',
    text: 'backend flow on Redis >= 0.7x bare Express',
    suite: 'flow',
    row: 'netauth-redis',
    versus: 'express-bare',
    min: 0.7,
  },
  {
    kind: 'ratio',
    text: 'guard on JWT access tokens >= 0.85x the same route without it (bare Express)',
    suite: 'guard',
    row: 'netauth-jwt',
    versus: 'express-bare',
    min: 0.85,
  },
  {
    kind: 'ratio',
    text: 'guard >= 0.9x the same route without it (bare Express)',
    suite: 'guard',
    row: 'netauth',
    versus: 'express-bare',
    min: 0.9,
  },
  // "Cost at most 10%": CPU per flow at most 1.1x, i.e. throughput at least 1/1.1 of the same server with them off.
  {
    kind: 'ratio',
    text: 'default rate limits cost <= 10% (>= 0.91x the same server with them off)',
    suite: 'flow',
    row: 'netauth-limits',
    versus: 'netauth',
    min: 1 / 1.1,
  },
  {
    kind: 'ratio',
    text: 'Redis store >= 0.6x memory store',
    suite: 'flow',
    row: 'netauth-redis',
    versus: 'netauth',
    min: 0.6,
  },
  { kind: 'soak', text: 'RSS flat over a 60 s sustained run', maxGrowth: 0.1 },
  {
    kind: 'loop',
    text: 'event loop responsive under hostile input (max delay <= 100 ms)',
    suite: 'hostile',
    row: 'netauth',
    maxMs: 100,
  },
];
