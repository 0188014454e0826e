import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { StaticClientRegistry, hashClientSecret, type ClientRegistry, type RegisteredClient } from '../../lib/index.js';
import { CLIENTS, LOCATION, SECRET, SIM_SWAP, basic, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { CAMARA_CLIENT, CAMARA_KEY, assertionFields, clientAssertion, ecPair } from '../helpers/client-jwts.js';
import { recordEvents } from '../helpers/events.js';

/**
 * Issue 42, finding 4: the gateway's caches of a registration (the secret's digest, the checks' verdict, the imported
 * keys, the scopes) key on the record's content, not on the object, so a registry that edits a record it returned
 * (a rotated secret, new keys) has the edit take effect at the next request; a static list is a frozen copy.
 */

/** A portal row: the registry hands out this same object on every lookup, and edits it in place. */
type Row = { -readonly [K in keyof RegisteredClient]: RegisteredClient[K] };

/** A registry that caches its records as objects, as a portal's in-process cache would. */
function cachingRegistry(rows: readonly Row[]): ClientRegistry {
  return {
    authMethods: ['client_secret_basic', 'private_key_jwt'],
    find: async (clientId) => rows.find((row) => row.clientId === clientId),
  };
}

const ALICE = 'tel:+34600000001';

const bySecret = (gw: TestGateway, clientId: string, secret: string, scope = SIM_SWAP) =>
  request(gw.app)
    .post('/apigateway/bc-authorize')
    .set('Authorization', basic(clientId, secret))
    .type('form')
    .send({ login_hint: ALICE, scope });

describe('a registry that edits a record it returned: the edit takes effect', () => {
  it('a secret rotated by editing the cached record: the old secret stops working, the new one works', async () => {
    const row: Row = { ...CLIENTS[0]!, clientSecret: 'old-secret' };
    const gw = createTestGateway({ clients: cachingRegistry([row]), rateLimits: false });
    expect((await bySecret(gw, 'app-1', 'old-secret')).status).toBe(200);
    row.clientSecret = 'new-secret';
    expect((await bySecret(gw, 'app-1', 'old-secret')).status).toBe(401);
    expect((await bySecret(gw, 'app-1', 'new-secret')).status).toBe(200);
  });

  it('a hash rotated in place (sha256, then scrypt): the old secret stops working, the new one works', async () => {
    const row: Row = { ...CLIENTS[0]!, clientSecret: undefined, clientSecretHash: await hashClientSecret('first') };
    const gw = createTestGateway({ clients: cachingRegistry([row]), rateLimits: false });
    expect((await bySecret(gw, 'app-1', 'first')).status).toBe(200);
    row.clientSecretHash = await hashClientSecret('second', 'scrypt');
    expect((await bySecret(gw, 'app-1', 'first')).status).toBe(401);
    expect((await bySecret(gw, 'app-1', 'second')).status).toBe(200);
  });

  it('keys rotated in place (the jwks edited): the new key authenticates, the old one no longer does', async () => {
    const next = ecPair('next-key');
    const row: Row = { ...CAMARA_CLIENT, jwks: { keys: [CAMARA_KEY.publicJwk] } };
    const gw = createTestGateway({ clients: cachingRegistry([row]), rateLimits: false });
    const withKey = async (key: typeof CAMARA_KEY) => {
      const assertion = await clientAssertion({ now: Math.floor(gw.clock.now / 1000), key });
      return request(gw.app)
        .post('/apigateway/bc-authorize')
        .type('form')
        .send({ login_hint: ALICE, scope: SIM_SWAP, ...assertionFields(assertion) });
    };
    expect((await withKey(CAMARA_KEY)).status).toBe(200);
    (row.jwks!.keys as unknown[]).splice(0, 1, next.publicJwk);
    expect((await withKey(next)).status).toBe(200);
    expect((await withKey(CAMARA_KEY)).status).toBe(401);
  });

  it('scopes edited in place: a scope added is granted, a scope removed is invalid_scope', async () => {
    const row: Row = { ...CLIENTS[1]!, scopes: [SIM_SWAP] };
    const gw = createTestGateway({ clients: cachingRegistry([row]), rateLimits: false });
    expect((await bySecret(gw, 'app-2', 'other-secret', SIM_SWAP)).status).toBe(200);
    (row.scopes as string[]).splice(0, 1, LOCATION);
    expect((await bySecret(gw, 'app-2', 'other-secret', SIM_SWAP)).body.error).toBe('invalid_scope');
    // A consent scope: accepted (pending consent), no longer invalid_scope.
    expect((await bySecret(gw, 'app-2', 'other-secret', LOCATION)).body.error).not.toBe('invalid_scope');
  });

  it('a record edited into one that fails the checks is refused and reported; edited back, it is served again', async () => {
    const row: Row = { ...CLIENTS[0]! };
    const gw = createTestGateway({ clients: cachingRegistry([row]), rateLimits: false });
    const events = recordEvents(gw.netauth);
    expect((await bySecret(gw, 'app-1', SECRET)).status).toBe(200);
    row.redirectUris = ['http://app.example/callback'];
    expect((await bySecret(gw, 'app-1', SECRET)).status).toBe(401);
    expect(events.of('client.registration_refused')).toEqual([
      { clientId: 'app-1', field: 'redirectUris', reason: expect.stringContaining('uses http: outside loopback') },
    ]);
    row.redirectUris = CLIENTS[0]!.redirectUris;
    expect((await bySecret(gw, 'app-1', SECRET)).status).toBe(200);
  });
});

describe('a static list is a frozen copy, taken when it is checked', () => {
  it('editing the objects given afterwards changes nothing: the secret checked at start-up stays the one used', async () => {
    const given: Row = { ...CLIENTS[0]! };
    const gw = createTestGateway({ clients: [given], rateLimits: false });
    given.clientSecret = 'edited';
    given.redirectUris = ['http://app.example/callback'];
    expect((await bySecret(gw, 'app-1', SECRET)).status).toBe(200);
    expect((await bySecret(gw, 'app-1', 'edited')).status).toBe(401);
  });

  it('the records it finds are frozen, down to their lists and keys', async () => {
    const registry = new StaticClientRegistry([CLIENTS[0]!, CAMARA_CLIENT]);
    const found = (await registry.find('aggregator'))!;
    expect(Object.isFrozen(found)).toBe(true);
    expect(Object.isFrozen(found.scopes)).toBe(true);
    expect(Object.isFrozen(found.jwks!.keys[0])).toBe(true);
    expect(() => (found.scopes as string[]).push(LOCATION)).toThrow(TypeError);
  });
});
