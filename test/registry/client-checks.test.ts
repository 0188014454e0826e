import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createNetAuth, type ClientRegistry, type RegisteredClient } from '../../lib/index.js';
import {
  CLIENTS,
  ISSUER,
  POLICY,
  SECRET,
  SIM_SWAP,
  SUBSCRIBERS,
  basic,
  createTestGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { CAMARA_CLIENT, CAMARA_KEY, assertionFields, clientAssertion } from '../helpers/client-jwts.js';
import { authorize } from '../helpers/frontend.js';
import { recordEvents } from '../helpers/events.js';

/**
 * Issue 32, finding 5: records from any ClientRegistry pass the checks a static registration passes at start-up,
 * and a `jwksUri` is fetched only over https: from public addresses (unless its origin is listed in
 * `clientJwks.internalOrigins`), at the address checked when its host was resolved.
 */

/** A key server on loopback that counts every connection (a TLS handshake too) and every request. */
interface CountingServer {
  port: number;
  connections: number;
  requests: number;
  close(): Promise<void>;
}

async function countingServer(): Promise<CountingServer> {
  const state = { connections: 0, requests: 0 };
  const server: Server = createServer((_req, res) => {
    state.requests += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [CAMARA_KEY.publicJwk] }));
  });
  server.on('connection', () => {
    state.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** The operator's developer portal: builds a new record object on every lookup, as a database would. */
function portal(records: readonly RegisteredClient[]): ClientRegistry & { lookups: number } {
  const registry = {
    lookups: 0,
    authMethods: ['client_secret_basic', 'private_key_jwt'] as const,
    async find(clientId: string) {
      registry.lookups += 1;
      const found = records.find((r) => r.clientId === clientId);
      return found === undefined ? undefined : (structuredClone(found) as RegisteredClient);
    },
  };
  return registry;
}

function remote(clientId: string, jwksUri: string): RegisteredClient {
  const { jwks: _inline, ...keyless } = CAMARA_CLIENT;
  return { ...keyless, clientId, jwksUri };
}

const nowOf = (gw: TestGateway): number => Math.floor(gw.clock.now / 1000);

function bcAuthorize(gw: TestGateway, clientId: string) {
  return clientAssertion({ now: nowOf(gw), clientId }).then((assertion) =>
    request(gw.app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP, ...assertionFields(assertion, clientId) }),
  );
}

describe("a custom registry's jwksUri to loopback or a private address is never fetched", () => {
  let keys: CountingServer;
  beforeAll(async () => {
    keys = await countingServer();
  });
  afterAll(() => keys.close());

  it('http:, https: to 127.0.0.1, a name resolving to loopback, a private address: 401, no connection made', async () => {
    const records = [
      remote('plain-http', `http://127.0.0.1:${keys.port}/jwks.json`),
      remote('loopback-literal', `https://127.0.0.1:${keys.port}/jwks.json`),
      remote('loopback-v6', `https://[::ffff:127.0.0.1]:${keys.port}/jwks.json`),
      remote('loopback-name', `https://localhost:${keys.port}/jwks.json`),
      remote('private', 'https://10.0.0.1/jwks.json'),
      remote('link-local', 'https://169.254.169.254/latest/meta-data'),
    ];
    const gw = createTestGateway({ clients: portal(records), rateLimits: false });
    const events = recordEvents(gw.netauth);
    for (const { clientId } of records) {
      const res = await bcAuthorize(gw, clientId);
      expect(res.status, clientId).toBe(401);
      expect(res.body.error).toBe('invalid_client');
    }
    expect(keys.connections).toBe(0);
    expect(keys.requests).toBe(0);
    // Literal addresses and schemes are registration errors, named with the client and the field.
    expect(events.of('client.registration_refused').map(({ clientId, field }) => [clientId, field])).toEqual([
      ['plain-http', 'jwksUri'],
      ['loopback-literal', 'jwksUri'],
      ['loopback-v6', 'jwksUri'],
      ['private', 'jwksUri'],
      ['link-local', 'jwksUri'],
    ]);
    for (const event of events.of('client.registration_refused'))
      expect(JSON.stringify(event)).not.toContain(CAMARA_KEY.publicJwk.n!);
  });

  it('the same origin listed in clientJwks.internalOrigins is fetched, and the client served', async () => {
    const uri = `http://127.0.0.1:${keys.port}/jwks.json`;
    const gw = createTestGateway({
      clients: portal([remote('listed', uri)]),
      rateLimits: false,
      clientJwks: { internalOrigins: [new URL(uri).origin] },
    });
    expect((await bcAuthorize(gw, 'listed')).status).toBe(200);
    expect(keys.requests).toBe(1);
  });
});

describe("a custom registry's records pass the static checks, once per record", () => {
  it('an http: redirect URI outside loopback: /authorize answers the error page, no redirect', async () => {
    const insecure = { ...CLIENTS[0]!, redirectUris: ['http://app.example/callback'] };
    const gw = createTestGateway({ clients: portal([insecure]) });
    const events = recordEvents(gw.netauth);
    const res = await authorize(gw.app, { redirect_uri: 'http://app.example/callback' });
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(events.of('client.registration_refused')).toEqual([
      { clientId: 'app-1', field: 'redirectUris', reason: expect.stringContaining('uses http: outside loopback') },
    ]);
  });

  it('a refused record is reported once, not on every request; a secret is never in the report', async () => {
    const broken = {
      ...CLIENTS[0]!,
      clientSecret: 'the-secret-value',
      grantTypes: ['password'],
    } as unknown as RegisteredClient;
    const registry = portal([broken]);
    const gw = createTestGateway({ clients: registry, rateLimits: false });
    const events = recordEvents(gw.netauth);
    for (let i = 0; i < 3; i += 1) {
      const res = await request(gw.app)
        .post('/apigateway/bc-authorize')
        .auth('app-1', 'the-secret-value')
        .type('form')
        .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
      expect(res.status).toBe(401);
    }
    expect(registry.lookups).toBe(3);
    const refused = events.of('client.registration_refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ clientId: 'app-1', field: 'grantTypes' });
    expect(JSON.stringify(refused)).not.toContain('the-secret-value');
  });

  it('a valid record is served', async () => {
    const gw = createTestGateway({ clients: portal(CLIENTS) });
    const res = await request(gw.app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', basic('app-1', SECRET))
      .type('form')
      .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(res.status).toBe(200);
  });
});

describe('static clients: the jwksUri destination policy at start-up', () => {
  const options = (clients: RegisteredClient[], internalOrigins?: string[]) => ({
    issuer: ISSUER,
    clients,
    subscribers: SUBSCRIBERS,
    consentPolicy: POLICY,
    pairwiseSalt: 'salt',
    ...(internalOrigins ? { clientJwks: { internalOrigins } } : {}),
  });

  it('https://10.0.0.1/jwks is refused unless its origin is listed', async () => {
    const client = remote('private-keys', 'https://10.0.0.1/jwks');
    expect(() => createNetAuth(options([client]))).toThrow(
      /client private-keys: jwksUri "https:\/\/10\.0\.0\.1\/jwks" names a private, loopback or link-local address/,
    );
    expect(() => createNetAuth(options([remote('v6', 'https://[fd00::1]/jwks')]))).toThrow(
      /jwksUri .* names a private/,
    );
    expect(() => createNetAuth(options([remote('dev', 'http://127.0.0.1:8080/jwks')]))).toThrow(
      /jwksUri .* must use https:/,
    );
    const listed = createNetAuth(options([client], ['https://10.0.0.1']));
    await listed.close();
  });

  it('internalOrigins must hold origins', () => {
    expect(() => createNetAuth(options([], ['https://keys.internal/path']))).toThrow(
      /clientJwks\.internalOrigins: "https:\/\/keys\.internal\/path" is not an origin/,
    );
    expect(() => createNetAuth(options([], ['keys.internal']))).toThrow(/is not an origin/);
  });
});
