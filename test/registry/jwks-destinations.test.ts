import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createNetAuth, type ClientRegistry, type RegisteredClient } from '../../lib/index.js';
import { ISSUER, POLICY, SIM_SWAP, SUBSCRIBERS, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { CAMARA_CLIENT, CAMARA_KEY, assertionFields, clientAssertion } from '../helpers/client-jwts.js';
import { recordEvents } from '../helpers/events.js';

/**
 * Issue 42, finding 8: the `jwksUri` destination policy judges an IPv6 address that carries an IPv4 one by that IPv4
 * address, the one its packets reach: IPv4-compatible (`::/96`), IPv4-mapped (`::ffff:0:0/96`), IPv4-translated
 * (`::ffff:0:0:0/96`), NAT64 (`64:ff9b::/96`, common in operator networks) and 6to4 (`2002::/16`). And an `http:`
 * origin listed in `clientJwks.internalOrigins` is accepted on any host, as the docs say, not on loopback only.
 */

function remote(clientId: string, jwksUri: string): RegisteredClient {
  const { jwks: _inline, ...keyless } = CAMARA_CLIENT;
  return { ...keyless, clientId, jwksUri };
}

const options = (clients: RegisteredClient[] | ClientRegistry, internalOrigins?: string[]) => ({
  issuer: ISSUER,
  clients,
  subscribers: SUBSCRIBERS,
  consentPolicy: POLICY,
  pairwiseSalt: 'salt',
  ...(internalOrigins ? { clientJwks: { internalOrigins } } : {}),
});

/** Each prefix, with an internal IPv4 address (loopback, private, link-local: the cloud metadata address) in it. */
const INTERNAL_EMBEDDED: Array<[string, string]> = [
  ['IPv4-compatible ::/96 (10.0.0.1)', '[::a00:1]'],
  ['IPv4-compatible ::/96 (127.0.0.1)', '[::7f00:1]'],
  ['IPv4-mapped ::ffff:0:0/96 (10.0.0.1)', '[::ffff:a00:1]'],
  ['IPv4-translated ::ffff:0:0:0/96 (127.0.0.1)', '[::ffff:0:7f00:1]'],
  ['NAT64 64:ff9b::/96 (169.254.169.254)', '[64:ff9b::a9fe:a9fe]'],
  ['NAT64 64:ff9b::/96 (10.0.0.1)', '[64:ff9b::a00:1]'],
  ['6to4 2002::/16 (169.254.169.254)', '[2002:a9fe:a9fe::1]'],
  ['6to4 2002::/16 (192.168.0.1)', '[2002:c0a8:1::]'],
  ['the unspecified address ::', '[::]'],
];

describe('IPv6 addresses that carry an IPv4 address are judged by it', () => {
  it.each(INTERNAL_EMBEDDED)(
    '%s: a static jwksUri naming it is a start-up error unless listed',
    async (_name, host) => {
      const uri = `https://${host}/jwks`;
      expect(() => createNetAuth(options([remote('embedded', uri)]))).toThrow(
        /client embedded: jwksUri .* names a private, loopback or link-local address/,
      );
      const listed = createNetAuth(options([remote('embedded', uri)], [new URL(uri).origin]));
      await listed.close();
    },
  );

  it('one carrying a public IPv4 address (NAT64 and 6to4 of 8.8.8.8) is public, as that address is', async () => {
    for (const host of ['[64:ff9b::808:808]', '[2002:808:808::1]']) {
      const netauth = createNetAuth(options([remote('public', `https://${host}/jwks`)]));
      await netauth.close();
    }
  });

  it("a custom registry's record naming one: 401 invalid_client, refused as a registration, nothing fetched", async () => {
    let connections = 0;
    const server = createServer((_req, res) => res.end('{}')).on('connection', () => {
      connections += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const records = INTERNAL_EMBEDDED.map(([, host], i) => remote(`embedded-${i}`, `https://${host}:${port}/jwks`));
      const gw = createTestGateway({
        clients: { find: async (id) => records.find((r) => r.clientId === id) },
        rateLimits: false,
      });
      const events = recordEvents(gw.netauth);
      for (const { clientId } of records) {
        const res = await bcAuthorize(gw, clientId);
        expect(res.status, clientId).toBe(401);
        expect(res.body.error).toBe('invalid_client');
      }
      expect(events.of('client.registration_refused').map((e) => e.field)).toEqual(records.map(() => 'jwksUri'));
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });
});

function bcAuthorize(gw: TestGateway, clientId: string) {
  return clientAssertion({ now: Math.floor(gw.clock.now / 1000), clientId }).then((assertion) =>
    request(gw.app)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP, ...assertionFields(assertion, clientId) }),
  );
}

describe('an http: origin listed in clientJwks.internalOrigins, on a host that is not loopback', () => {
  // 127.0.0.2 answers on this machine, but is none of the loopback names the redirect-URI rule knows
  // (localhost, 127.0.0.1, [::1]): it stands for a key server inside the operator's network.
  let server: Server;
  let origin: string;
  let requests = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      requests += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [CAMARA_KEY.publicJwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    origin = `http://127.0.0.2:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('a static client with it starts, and its keys are fetched there: the client is served', async () => {
    const gw = createTestGateway({
      clients: [remote('internal', `${origin}/jwks`)],
      clientJwks: { internalOrigins: [origin] },
      rateLimits: false,
    });
    const before = requests;
    expect((await bcAuthorize(gw, 'internal')).status).toBe(200);
    expect(requests - before).toBe(1);
  });

  it("a custom registry's record with it is served", async () => {
    const record = remote('internal', `${origin}/jwks`);
    const gw = createTestGateway({
      clients: { find: async (id) => (id === 'internal' ? record : undefined) },
      clientJwks: { internalOrigins: [origin] },
      rateLimits: false,
    });
    expect((await bcAuthorize(gw, 'internal')).status).toBe(200);
  });

  it('not listed, it is still refused: at start-up for a static client, at use for a custom one', async () => {
    expect(() => createNetAuth(options([remote('internal', `${origin}/jwks`)]))).toThrow(
      /client internal: jwksUri .* must use https:/,
    );
    const record = remote('internal', `${origin}/jwks`);
    const gw = createTestGateway({
      clients: { find: async (id) => (id === 'internal' ? record : undefined) },
      rateLimits: false,
    });
    expect((await bcAuthorize(gw, 'internal')).status).toBe(401);
  });
});
