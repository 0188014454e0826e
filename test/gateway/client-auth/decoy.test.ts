import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { StaticClientRegistry, hashClientSecret, type ClientRegistry, type RegisteredClient } from '../../../lib/index.js';
import { decoyFor, verifySecret } from '../../../lib/gateway/client-auth/client-secret.js';
import { CLIENTS, SIM_SWAP, basic, createTestGateway } from '../../helpers/gateway.js';

/**
 * An unknown client id is compared against a decoy that costs what a registered client's check costs, so
 * unknown ids are not told apart by timing. Timing is not measured here (bench/ measures speed): the work is
 * asserted instead, by the decoy's hash kind and parameters against the registered ones.
 */

/** Kind, salt bytes and key bytes of a registration's secret check. */
function work(client: RegisteredClient): { kind: string; salt?: number; key?: number } {
  if (client.clientSecretHash === undefined) return { kind: 'sha256' };
  const [kind, salt, key] = client.clientSecretHash.split(':');
  if (kind !== 'scrypt') return { kind: kind! };
  return { kind, salt: Buffer.from(salt!, 'base64url').length, key: Buffer.from(key!, 'base64url').length };
}

const scryptClient = async (clientId = 'human'): Promise<RegisteredClient> => ({
  clientId,
  clientSecretHash: await hashClientSecret('a person chose this', 'scrypt'),
  grantTypes: ['urn:openid:params:grant-type:ciba'],
  scopes: [SIM_SWAP],
});

describe('the decoy for unknown client ids', () => {
  it('plain and sha256 secrets only: one SHA-256, as a registered check', async () => {
    const registry = new StaticClientRegistry([...CLIENTS, { ...CLIENTS[1]!, clientId: 'hashed', clientSecret: undefined, clientSecretHash: await hashClientSecret('x') }]);
    expect(work(decoyFor(registry))).toEqual({ kind: 'sha256' });
  });

  it('a static registry with scrypt secrets: the decoy is an scrypt hash with the registered parameters, from the start', async () => {
    const human = await scryptClient();
    const registry = new StaticClientRegistry([...CLIENTS, human]);
    expect(work(decoyFor(registry))).toEqual(work(human));
    expect(work(human)).toEqual({ kind: 'scrypt', salt: 16, key: 32 });
    // Its own salt and key: nothing of a real registration is reused.
    expect(decoyFor(registry).clientSecretHash).not.toBe(human.clientSecretHash);
  });

  it('an scrypt hash of other lengths: the decoy has those lengths', async () => {
    const human = await scryptClient();
    const [, salt] = human.clientSecretHash!.split(':');
    const longer = { ...human, clientSecretHash: `scrypt:${salt}:${Buffer.alloc(64, 7).toString('base64url')}` };
    expect(work(decoyFor(new StaticClientRegistry([longer])))).toEqual({ kind: 'scrypt', salt: 16, key: 64 });
  });

  it('a custom registry: the kinds are learnt from the clients it returns', async () => {
    const human = await scryptClient();
    const inner = new StaticClientRegistry([...CLIENTS, human]);
    const custom: ClientRegistry = { find: (id) => inner.find(id) };
    expect(work(decoyFor(custom))).toEqual({ kind: 'sha256' });
    expect(await verifySecret(custom, await custom.find('human'), 'wrong')).toEqual({ known: human });
    expect(work(decoyFor(custom))).toEqual(work(human));
    expect(await verifySecret(custom, await custom.find('nobody'), 'a person chose this')).toEqual({});
  });

  it('at the endpoint: an unknown id is 401 as before, the scrypt client authenticates', async () => {
    const human = await scryptClient();
    const { app } = createTestGateway({ clients: [...CLIENTS, human], rateLimits: false });
    const post = (authorization: string) =>
      request(app).post('/apigateway/bc-authorize').set('Authorization', authorization).type('form').send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect((await post(basic('nobody', 'a person chose this'))).status).toBe(401);
    expect((await post(basic('human', 'a person chose this'))).status).toBe(200);
  });

  it.each(['client_secret_basic', 'client_secret_post'] as const)('asks the registry once per %s request, lock-out on (it keys the slot and the check by what it found)', async (method) => {
    const inner = new StaticClientRegistry(CLIENTS.map((c) => ({ ...c, tokenEndpointAuthMethod: method })));
    const asked: string[] = [];
    const counting: ClientRegistry = {
      find: (id) => {
        asked.push(id);
        return inner.find(id);
      },
    };
    const { app } = createTestGateway({ clients: counting });
    const { clientId, clientSecret } = CLIENTS[0]!;
    const form = { login_hint: 'tel:+34600000001', scope: SIM_SWAP };
    const res =
      method === 'client_secret_basic'
        ? await request(app).post('/apigateway/bc-authorize').set('Authorization', basic(clientId, clientSecret!)).type('form').send(form)
        : await request(app).post('/apigateway/bc-authorize').type('form').send({ ...form, client_id: clientId, client_secret: clientSecret! });
    expect(res.status).toBe(200);
    expect(asked).toEqual([clientId]);
  });
});
