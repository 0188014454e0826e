import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import type { RegisteredClient } from '../../../lib/index.js';
import { CLIENTS, SIM_SWAP, basic, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  CAMARA_CLIENT,
  CAMARA_KEY,
  assertionFields,
  clientAssertion,
  rsaPair,
  type ClientKeyPair,
} from '../../helpers/client-jwts.js';

/**
 * A client's `jwksUri`, served by real local HTTP servers: fetched once and cached, fetched again for an unknown
 * kid at once but at most once per 10 s, and a slow, huge, unreachable or garbage-serving URL gives invalid_client in bounded
 * time without holding up any other client.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface JwksServer {
  url: string;
  hits: number;
  handler: Handler;
  close(): Promise<void>;
}

async function jwksServer(handler: Handler): Promise<JwksServer> {
  const state = { hits: 0, handler };
  const server: Server = createServer((req, res) => {
    state.hits += 1;
    state.handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  return Object.assign(state, {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as JwksServer;
}

const serve =
  (status: number, body: string, type = 'application/json'): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': type }).end(body);
  };

const keySet = (...pairs: ClientKeyPair[]) => JSON.stringify({ keys: pairs.map((p) => p.publicJwk) });

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The loopback origins of these clients' jwksUris: the destination policy lets only listed ones through. */
function internalOrigins(clients: readonly RegisteredClient[]): string[] {
  return [...new Set(clients.flatMap((c) => (c.jwksUri === undefined ? [] : [new URL(c.jwksUri).origin])))];
}

function remoteClient(clientId: string, jwksUri: string): RegisteredClient {
  const { jwks: _inline, ...rest } = CAMARA_CLIENT;
  return { ...rest, clientId, jwksUri };
}

function bcAuthorize(app: Express, fields: Record<string, string>) {
  return request(app)
    .post('/apigateway/bc-authorize')
    .type('form')
    .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP, ...fields });
}

const ROTATED = rsaPair('rotated-in');
const UNKNOWN = rsaPair('nobody-has-it');

describe('jwksUri: fetched, cached, refetched for an unknown kid at once, at most once per 10 s', () => {
  let good: JwksServer;
  let gw: TestGateway;
  const now = () => Math.floor(gw.clock.now / 1000);
  const authenticate = async (clientId: string, key: ClientKeyPair = CAMARA_KEY) =>
    bcAuthorize(gw.app, assertionFields(await clientAssertion({ now: now(), clientId, key }), clientId));

  beforeAll(async () => {
    good = await jwksServer(serve(200, keySet(CAMARA_KEY)));
    const clients = [...CLIENTS, ...['remote', 'remote-2', 'remote-3'].map((id) => remoteClient(id, good.url))];
    gw = createTestGateway({ clients, rateLimits: false, clientJwks: { internalOrigins: internalOrigins(clients) } });
  });
  afterAll(() => good.close());

  it('the first request fetches the set; later ones use the cache', async () => {
    expect((await authenticate('remote')).status).toBe(200);
    expect((await authenticate('remote')).status).toBe(200);
    expect(good.hits).toBe(1);
  });

  it('concurrent first requests of a client share one fetch', async () => {
    const before = good.hits;
    const answers = await Promise.all(Array.from({ length: 10 }, () => authenticate('remote-2')));
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(good.hits - before).toBe(1);
  });

  it('a rotated-in key: fetched at once and accepted; refused only within 10 s of the last fetch', async () => {
    // Issue 32, item 10: a rotated kid was refused for up to a minute.
    expect((await authenticate('remote-3')).status).toBe(200);
    const fetched = good.hits;
    good.handler = serve(200, keySet(CAMARA_KEY, ROTATED));
    // Rotated within 10 s of the fetch: refused, nothing fetched.
    gw.clock.advance(9);
    expect((await authenticate('remote-3', ROTATED)).status).toBe(401);
    expect(good.hits).toBe(fetched);
    // From 10 s on, the first request with the new kid fetches the set and is served.
    gw.clock.advance(1);
    expect((await authenticate('remote-3', ROTATED)).status).toBe(200);
    expect(good.hits).toBe(fetched + 1);
    // A stream of unknown kids (a forger's) makes the gateway fetch at most once per 10 s.
    for (let i = 0; i < 5; i++) expect((await authenticate('remote-3', UNKNOWN)).status).toBe(401);
    expect(good.hits).toBe(fetched + 1);
    gw.clock.advance(10);
    for (let i = 0; i < 5; i++) expect((await authenticate('remote-3', UNKNOWN)).status).toBe(401);
    expect(good.hits).toBe(fetched + 2);
  });

  it('after cacheMaxAge (default 600 s) the set is fetched again, and a removed key stops verifying', async () => {
    good.handler = serve(200, keySet(ROTATED));
    expect((await authenticate('remote')).status).toBe(200);
    const fetched = good.hits;
    gw.clock.advance(600);
    expect((await authenticate('remote')).status).toBe(401);
    expect(good.hits).toBe(fetched + 1);
    expect((await authenticate('remote', ROTATED)).status).toBe(200);
  });
});

describe('jwksUri that fails: invalid_client in bounded time, never holding up other clients', () => {
  const servers: JwksServer[] = [];
  const held: ServerResponse[] = [];
  /** Requests the slow server holds until the test answers them. */
  const waiting: ServerResponse[] = [];
  let gw: TestGateway;
  let slowGw: TestGateway;
  let hugeGw: TestGateway;
  let goodUrl: string;
  const now = (g: TestGateway) => Math.floor(g.clock.now / 1000);
  const authenticate = async (g: TestGateway, clientId: string) =>
    bcAuthorize(g.app, assertionFields(await clientAssertion({ now: now(g), clientId }), clientId));

  beforeAll(async () => {
    const start = async (handler: Handler) => {
      const server = await jwksServer(handler);
      servers.push(server);
      return server.url;
    };
    goodUrl = await start(serve(200, keySet(CAMARA_KEY)));
    const never = await start((_req, res) => void held.push(res));
    const stalls = await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
      held.push(res);
    });
    // An endless body: only the byte cap can end the read.
    const endless = await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
      const chunk = ' '.repeat(16 * 1024);
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const declaredHuge = await start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) });
      res.write('{"keys":[');
      held.push(res);
    });
    const unreachable = `http://127.0.0.1:${await closedPort()}/jwks.json`;
    const garbage: Array<[string, Handler]> = [
      ['not-json', serve(200, 'this is not json', 'text/plain')],
      ['html', serve(200, '<html><body>Welcome</body></html>', 'text/html')],
      ['no-keys', serve(200, '{"kes":[]}')],
      ['keys-not-array', serve(200, '{"keys":"x"}')],
      ['array', serve(200, '[1,2,3]')],
      ['error-500', serve(500, keySet(CAMARA_KEY))],
      ['not-found', serve(404, 'missing', 'text/plain')],
      ['redirect', (_req, res) => void res.writeHead(302, { location: goodUrl }).end()],
      ['private-keys', serve(200, JSON.stringify({ keys: [CAMARA_KEY.privateJwk] }))],
      [
        'bad-utf8',
        (_req, res) =>
          void res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])),
      ],
      [
        'truncated',
        (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[{"kty":"RSA"'),
      ],
      ['reset', (req) => void req.socket.destroy()],
    ];
    const garbageClients: RegisteredClient[] = [];
    for (const [name, handler] of garbage) garbageClients.push(remoteClient(`garbage-${name}`, await start(handler)));

    const base = [...CLIENTS, CAMARA_CLIENT, remoteClient('good-remote', goodUrl)];
    const clients = [
      ...base,
      ...garbageClients,
      remoteClient('unreachable', unreachable),
      remoteClient('never', never),
      remoteClient('stalls', stalls),
    ];
    gw = createTestGateway({
      clients,
      rateLimits: false,
      // Short, so the bounded-time cases end quickly.
      clientJwks: { fetchTimeout: 300, internalOrigins: internalOrigins(clients) },
    });
    // Long timeouts: here only the byte cap (or the test releasing the server) can end a fetch.
    const hugeClients = [...base, remoteClient('endless', endless), remoteClient('declared-huge', declaredHuge)];
    hugeGw = createTestGateway({
      clients: hugeClients,
      rateLimits: false,
      clientJwks: { fetchTimeout: 60_000, maxBytes: 64 * 1024, internalOrigins: internalOrigins(hugeClients) },
    });
    const holding = await start((_req, res) => void waiting.push(res));
    const slowClients = [...base, remoteClient('held', holding)];
    slowGw = createTestGateway({
      clients: slowClients,
      rateLimits: false,
      clientJwks: { fetchTimeout: 60_000, internalOrigins: internalOrigins(slowClients) },
    });
  });

  afterAll(async () => {
    for (const res of [...held, ...waiting]) res.destroy();
    for (const server of servers) await server.close();
  });

  it.each([
    'garbage-not-json',
    'garbage-html',
    'garbage-no-keys',
    'garbage-keys-not-array',
    'garbage-array',
    'garbage-error-500',
    'garbage-not-found',
    'garbage-redirect',
    'garbage-private-keys',
    'garbage-bad-utf8',
    'garbage-truncated',
    'garbage-reset',
  ])('%s: 401 invalid_client', async (clientId) => {
    const res = await authenticate(gw, clientId);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
  });

  it('unreachable (connection refused): 401 invalid_client', async () => {
    expect((await authenticate(gw, 'unreachable')).status).toBe(401);
    expect((await authenticate(gw, 'unreachable')).status).toBe(401);
  });

  it('a garbage answer is fetched again at most once a minute, and a repaired set is then used', async () => {
    const server = await jwksServer(serve(200, 'garbage'));
    servers.push(server);
    const clients = [...CLIENTS, remoteClient('repaired', server.url)];
    const clientJwks = { internalOrigins: internalOrigins(clients) };
    const local = createTestGateway({ clients, rateLimits: false, clientJwks });
    expect((await authenticate(local, 'repaired')).status).toBe(401);
    expect((await authenticate(local, 'repaired')).status).toBe(401);
    expect(server.hits).toBe(1);
    server.handler = serve(200, keySet(CAMARA_KEY));
    local.clock.advance(60);
    expect((await authenticate(local, 'repaired')).status).toBe(200);
    expect(server.hits).toBe(2);
  });

  it('a server that never answers, or stalls mid-body: 401 once fetchTimeout passes', async () => {
    expect((await authenticate(gw, 'never')).status).toBe(401);
    expect((await authenticate(gw, 'stalls')).status).toBe(401);
  });

  it('an endless body or a huge Content-Length: 401 from the byte cap, not a timeout', async () => {
    expect((await authenticate(hugeGw, 'endless')).status).toBe(401);
    expect((await authenticate(hugeGw, 'declared-huge')).status).toBe(401);
  });

  it('while one client waits on its slow jwksUri, other clients are served', async () => {
    let settled = false;
    const slow = authenticate(slowGw, 'held').then((res) => {
      settled = true;
      return res;
    });
    // Wait until the gateway's fetch has reached the server and is held there.
    while (waiting.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await authenticate(slowGw, 'aggregator')).status).toBe(200);
    expect((await authenticate(slowGw, 'good-remote')).status).toBe(200);
    expect((await bcAuthorize(slowGw.app, {}).set('Authorization', basic('app-2', 'other-secret'))).status).toBe(200);
    // A second request of the slow client waits on the same fetch rather than starting another.
    const second = authenticate(slowGw, 'held');
    expect(settled).toBe(false);
    // The server answers at last, with garbage: the waiting requests get their 401.
    for (const res of waiting.splice(0)) res.writeHead(200).end('nope');
    expect((await slow).status).toBe(401);
    expect((await second).status).toBe(401);
  });
});
