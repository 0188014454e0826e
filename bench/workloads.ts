/**
 * What the load generator sends. A workload is one operation (a whole flow, or one request) repeated in a
 * closed loop on every connection; throughput counts operations, latency is per operation, and each HTTP
 * step is also timed on its own. Per-server differences (e.g. node-oidc-provider needing `openid`) come in
 * as ServerParams from bench/servers/registry.ts, never as branches here.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { Client } from 'undici';
import {
  BENCH_CLIENT_ID,
  BENCH_CLIENT_SECRET,
  BENCH_DEVICE_IP,
  BENCH_PHONE,
  BENCH_REDIRECT_URI,
  ISSUER_PATH,
} from './servers/common.js';

/** What a server needs the load to send. */
export interface ServerParams {
  /** Scope of workload 1's bc-authorize: one that needs no consent, so the first poll gets the token. */
  flowScope: string;
  /** Scope whose requests stay pending (consent needed, none on record): workload 4's prefill. */
  pendingScope?: string;
}

export type WorkloadId = 'backend-flow' | 'frontend-flow' | 'guard' | 'hostile-params';

export const CIBA_GRANT = 'urn:openid:params:grant-type:ciba';

/** RFC 6749 §2.3.1: form-encode both halves, then base64. */
export function basicAuthorization(clientId: string, secret: string): string {
  const encode = (v: string): string =>
    encodeURIComponent(v)
      .replace(/%20/g, '+')
      .replace(/[-_.!~*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}

const CLIENT_AUTH = basicAuthorization(BENCH_CLIENT_ID, BENCH_CLIENT_SECRET);
const FORM_HEADERS = { authorization: CLIENT_AUTH, 'content-type': 'application/x-www-form-urlencoded' };

/** Latency recording shared by every connection; off during warm-up. */
export class Recorder {
  recording = false;
  ops = 0;
  failures = 0;
  firstFailure: string | undefined;
  readonly latency: RecordableHistogram = createHistogram();
  readonly steps = new Map<string, RecordableHistogram>();

  reset(): void {
    this.ops = 0;
    this.failures = 0;
    this.firstFailure = undefined;
    this.latency.reset();
    for (const h of this.steps.values()) h.reset();
  }

  step(name: string, ms: number): void {
    if (!this.recording) return;
    let h = this.steps.get(name);
    if (!h) {
      h = createHistogram();
      this.steps.set(name, h);
    }
    h.record(toMicros(ms));
  }

  operation(ok: boolean, ms: number, failure?: string): void {
    if (!this.recording) return;
    if (ok) {
      this.ops++;
      this.latency.record(toMicros(ms));
    } else {
      this.failures++;
      this.firstFailure ??= failure;
    }
  }
}

function toMicros(ms: number): number {
  return Math.max(1, Math.round(ms * 1000));
}

export interface Reply {
  status: number;
  body: string;
}

/** One keep-alive connection (undici Client, no pipelining). */
export class Connection {
  private readonly client: Client;

  constructor(
    origin: string,
    private readonly recorder: Recorder,
  ) {
    this.client = new Client(origin, { pipelining: 1, keepAliveTimeout: 100_000, keepAliveMaxTimeout: 100_000 });
  }

  /** A GET whose answer is a redirect: status and Location (the body, empty for a 302, is drained). */
  async getRedirect(
    step: string,
    path: string,
    headers: Record<string, string>,
  ): Promise<Reply & { location: string | undefined }> {
    const started = performance.now();
    const response = await this.client.request({ method: 'GET', path, headers });
    const text = await response.body.text();
    this.recorder.step(step, performance.now() - started);
    const location = response.headers.location;
    return { status: response.statusCode, body: text, location: Array.isArray(location) ? location[0] : location };
  }

  async post(step: string, path: string, headers: Record<string, string>, body: string): Promise<Reply> {
    const started = performance.now();
    const response = await this.client.request({ method: 'POST', path, headers, body });
    const text = await response.body.text();
    this.recorder.step(step, performance.now() - started);
    return { status: response.statusCode, body: text };
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** Thrown by an operation that got an unexpected answer; counted as a failure with its first text kept. */
export class OperationFailed extends Error {}

function expect(reply: Reply, step: string): Record<string, unknown> {
  if (reply.status !== 200) throw new OperationFailed(`${step}: HTTP ${reply.status} ${reply.body.slice(0, 200)}`);
  return JSON.parse(reply.body) as Record<string, unknown>;
}

function bcAuthorizeBody(scope: string): string {
  return new URLSearchParams({ login_hint: `tel:${BENCH_PHONE}`, scope }).toString();
}

/** bc-authorize, then the first poll, which must return the access token. Returns it. */
export async function backendFlow(conn: Connection, params: ServerParams): Promise<string> {
  const started = expect(
    await conn.post('bc-authorize', `${ISSUER_PATH}/bc-authorize`, FORM_HEADERS, bcAuthorizeBody(params.flowScope)),
    'bc-authorize',
  );
  const authReqId = started.auth_req_id;
  if (typeof authReqId !== 'string') throw new OperationFailed('bc-authorize: no auth_req_id');
  const body = `grant_type=${encodeURIComponent(CIBA_GRANT)}&auth_req_id=${encodeURIComponent(authReqId)}`;
  const token = expect(await conn.post('token', `${ISSUER_PATH}/token`, FORM_HEADERS, body), 'token');
  if (typeof token.access_token !== 'string') throw new OperationFailed('token: no access_token');
  return token.access_token;
}

/** A bc-authorize that stays pending (workload 4's prefill). */
export async function pendingRequest(conn: Connection, params: ServerParams): Promise<void> {
  if (!params.pendingScope) throw new Error('this server has no pendingScope');
  expect(
    await conn.post(
      'bc-authorize (pending)',
      `${ISSUER_PATH}/bc-authorize`,
      FORM_HEADERS,
      bcAuthorizeBody(params.pendingScope),
    ),
    'bc-authorize',
  );
}

export interface Workload<State> {
  /** Once per round, before the warm-up (e.g. obtain access tokens). */
  prepare(conns: readonly Connection[], params: ServerParams): Promise<State>;
  /** One operation. Throws on an unexpected answer. */
  operation(conn: Connection, params: ServerParams, state: State, index: number): Promise<void>;
}

const backendFlowWorkload: Workload<undefined> = {
  prepare: async () => undefined,
  operation: async (conn, params) => {
    await backendFlow(conn, params);
  },
};

interface Pkce {
  verifier: string;
  challenge: string;
}

/** RFC 7636 S256 pairs, made once: the load generator's CPU goes to requests, not to hashing. */
const PKCE: Pkce[] = Array.from({ length: 64 }, () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
});

/** The device's address as the operator's edge (the loopback hop the bench servers trust) reports it. */
const DEVICE_HEADERS = { 'x-forwarded-for': BENCH_DEVICE_IP };

/**
 * Workload 2, the frontend flow: GET /authorize from a network-identified address (no consent needed, so no
 * page) -> the code from the 302's Location -> POST /token with authorization_code, PKCE and HTTP Basic.
 * The operation succeeds when the token response carries an access_token.
 */
const frontendFlowWorkload: Workload<Pkce[]> = {
  prepare: async () => PKCE,
  operation: async (conn, params, pairs, index) => {
    const pkce = pairs[index % pairs.length]!;
    const state = `st${index}`;
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: BENCH_CLIENT_ID,
      redirect_uri: BENCH_REDIRECT_URI,
      scope: params.flowScope,
      state,
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    });
    const reply = await conn.getRedirect('authorize', `${ISSUER_PATH}/authorize?${query.toString()}`, DEVICE_HEADERS);
    if (reply.status !== 302 || !reply.location)
      throw new OperationFailed(`authorize: HTTP ${reply.status} ${reply.location ?? reply.body.slice(0, 200)}`);
    const location = new URL(reply.location);
    const code = location.searchParams.get('code');
    if (`${location.origin}${location.pathname}` !== BENCH_REDIRECT_URI || !code)
      throw new OperationFailed(`authorize: no code in ${reply.location}`);
    if (location.searchParams.get('state') !== state)
      throw new OperationFailed(`authorize: state not returned in ${reply.location}`);
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: BENCH_REDIRECT_URI,
      code_verifier: pkce.verifier,
    }).toString();
    const token = expect(await conn.post('token', `${ISSUER_PATH}/token`, FORM_HEADERS, body), 'token');
    if (typeof token.access_token !== 'string') throw new OperationFailed('token: no access_token');
  },
};

/** Workload 3: one service-API call with a bearer token (tokens from real flows, rotated). */
const guardWorkload: Workload<string[]> = {
  prepare: async (conns, params) => Promise.all(conns.map((c) => backendFlow(c, params))),
  operation: async (conn, _params, tokens, index) => {
    const token = tokens[index % tokens.length]!;
    const reply = await conn.post('service call', '/sim-swap/check', { authorization: `Bearer ${token}` }, '');
    expect(reply, 'service call');
  },
};

/** One request of the hostile workload. */
interface HostileRequest {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/**
 * Node's default limit on a request's head (request line and headers, `--max-http-header-size`): a query
 * filling the request line up to it, minus room for the headers sent, is the largest any GET can carry.
 */
const HEAD_LIMIT = 16 * 1024;
const QUERY_ROOM = HEAD_LIMIT - 600;
/** The servers' default `bodyLimit` ('16kb'); bodies stay just under it, so they are parsed, not refused as too large. */
const BODY_ROOM = 16 * 1024 - 64;

/** `prefix` followed by `part` joined with `separator` until `room` characters: the most repeats that fit. */
function fill(prefix: string, part: (i: number) => string, room: number, separator = '&'): string {
  let out = prefix;
  for (let i = 0; ; i++) {
    const next = `${i === 0 ? '' : separator}${part(i)}`;
    if (out.length + next.length > room) return out;
    out += next;
  }
}

/**
 * Workload 5's requests: every GET and POST endpoint, each with queries (up to the head limit) or bodies (up to
 * the body limit) of repeated parameters: one name repeated ~8,000 times, the endpoint's own parameter
 * repeated, and single parameters the endpoint parses further (a scope of thousands of distinct tokens, a
 * huge login_hint), sent by a registered client so they get past client checks to the parsers.
 */
function hostileRequests(): HostileRequest[] {
  const device = DEVICE_HEADERS;
  const authorizeBase = `${ISSUER_PATH}/authorize?response_type=code&client_id=${BENCH_CLIENT_ID}&redirect_uri=${encodeURIComponent(BENCH_REDIRECT_URI)}&state=s`;
  const scopeTokens = (i: number) => `s${i}`;
  const get = (name: string, path: string): HostileRequest => ({ name, method: 'GET', path, headers: device });
  const post = (
    name: string,
    path: string,
    body: string,
    headers: Record<string, string> = FORM_HEADERS,
  ): HostileRequest => ({ name, method: 'POST', path, headers, body });
  const requests: HostileRequest[] = [];
  for (const path of [
    '/authorize',
    '/consent',
    '/.well-known/openid-configuration',
    '/.well-known/oauth-authorization-server',
  ]) {
    requests.push(
      get(
        `GET ${path}: one name repeated`,
        fill(`${ISSUER_PATH}${path}?`, () => 'a', QUERY_ROOM),
      ),
    );
  }
  requests.push(
    get(
      'GET /authorize: client_id repeated',
      fill(`${ISSUER_PATH}/authorize?`, () => `client_id=${BENCH_CLIENT_ID}`, QUERY_ROOM),
    ),
    get(
      'GET /authorize: state repeated after a valid request',
      fill(`${authorizeBase}&`, () => 'state=x', QUERY_ROOM),
    ),
    get(
      'GET /authorize: a scope of distinct tokens',
      fill(`${authorizeBase}&scope=dpv%3AFraudPreventionAndDetection`, scopeTokens, QUERY_ROOM, '+'),
    ),
    get(
      'GET /authorize: a scope token repeated',
      fill(`${authorizeBase}&scope=dpv%3AFraudPreventionAndDetection`, () => 'sim-swap', QUERY_ROOM, '+'),
    ),
    get(
      'GET /authorize: a huge login_hint',
      fill(
        `${authorizeBase}&scope=dpv%3AFraudPreventionAndDetection%23sim-swap&login_hint=ipport%3A%5B`,
        () => '1',
        QUERY_ROOM,
        '%3A',
      ),
    ),
    get(
      'GET /consent: interaction repeated',
      fill(`${ISSUER_PATH}/consent?`, () => 'interaction=x', QUERY_ROOM),
    ),
  );
  const formPaths = ['/bc-authorize', '/token', '/introspect', '/revoke', '/consent'];
  for (const path of formPaths) {
    requests.push(
      post(
        `POST ${path}: one name repeated`,
        `${ISSUER_PATH}${path}`,
        fill('', () => 'a', BODY_ROOM),
      ),
    );
    requests.push(
      post(
        `POST ${path}: a parameter repeated`,
        `${ISSUER_PATH}${path}`,
        fill('', () => 'scope=x', BODY_ROOM),
      ),
    );
  }
  requests.push(
    post(
      'POST /bc-authorize: a scope of distinct tokens',
      `${ISSUER_PATH}/bc-authorize`,
      fill(
        `login_hint=tel%3A${encodeURIComponent(BENCH_PHONE)}&scope=dpv%3AFraudPreventionAndDetection`,
        scopeTokens,
        BODY_ROOM,
        '+',
      ),
    ),
    post(
      'POST /bc-authorize: a huge login_hint',
      `${ISSUER_PATH}/bc-authorize`,
      fill('scope=dpv%3AFraudPreventionAndDetection%23sim-swap&login_hint=ipport%3A', () => '1.', BODY_ROOM, ''),
    ),
    post(
      'POST /token: a huge auth_req_id',
      `${ISSUER_PATH}/token`,
      fill(`grant_type=${encodeURIComponent(CIBA_GRANT)}&auth_req_id=`, () => 'x', BODY_ROOM, ''),
    ),
    post(
      'POST /sim-swap/check (guard): parameters repeated',
      `/sim-swap/check?${fill('', () => 'a', QUERY_ROOM - 200)}`,
      fill('', () => 'a', BODY_ROOM),
      {
        authorization: 'Bearer not-a-token',
        'content-type': 'application/x-www-form-urlencoded',
      },
    ),
  );
  return requests;
}

/**
 * Workload 5, hostile input (`hostile` suite): the requests above in turn, one per operation. Each must be
 * answered without a server error (any status below 500); the server's event-loop delay during the window
 * (bench/servers/common.ts) says whether parsing them ever held the loop.
 */
const hostileParamsWorkload: Workload<HostileRequest[]> = {
  prepare: async () => hostileRequests(),
  operation: async (conn, _params, requests, index) => {
    const r = requests[index % requests.length]!;
    const reply =
      r.method === 'GET'
        ? await conn.getRedirect(r.name, r.path, r.headers)
        : await conn.post(r.name, r.path, r.headers, r.body ?? '');
    if (reply.status >= 500 || reply.status === 431)
      throw new OperationFailed(`${r.name}: HTTP ${reply.status} ${reply.body.slice(0, 200)}`);
  },
};

export const WORKLOADS: Record<WorkloadId, Workload<unknown>> = {
  'backend-flow': backendFlowWorkload as Workload<unknown>,
  'frontend-flow': frontendFlowWorkload as Workload<unknown>,
  guard: guardWorkload as Workload<unknown>,
  'hostile-params': hostileParamsWorkload as Workload<unknown>,
};
