import { describe, expect, it, vi } from 'vitest';
import type { Express } from 'express';
import request from 'supertest';
import {
  StaticClientRegistry,
  hashClientSecret,
  type ClientRegistry,
  type RegisteredClient,
} from '../../../lib/index.js';
import { decoyKind, verifySecret } from '../../../lib/gateway/client-auth/client-secret.js';
import { SCRYPT_DEFAULTS } from '../../../lib/defaults.js';
import { ScryptLimiter, deriveScrypt, scryptLimiter, type Derive } from '../../../lib/registry/scrypt.js';
import { CLIENTS, SIM_SWAP, basic, createTestGateway } from '../../helpers/gateway.js';

/**
 * An unknown client id costs what a registered client's check costs, so unknown ids are not told apart by timing;
 * for scrypt that cost is a timer, not a derivation (issue 32, finding 3), and real derivations run behind a
 * process-wide limit. Timing is not measured here (bench/ measures speed): the kind of decoy, and the number of
 * derivations the limiter ran or refused, are counted instead.
 */

const scryptClient = async (clientId = 'human'): Promise<RegisteredClient> => ({
  clientId,
  clientSecretHash: await hashClientSecret('a person chose this', 'scrypt'),
  grantTypes: ['urn:openid:params:grant-type:ciba'],
  scopes: [SIM_SWAP],
});

const bcAuthorize = (app: Express, authorization: string) =>
  request(app)
    .post('/apigateway/bc-authorize')
    .set('Authorization', authorization)
    .type('form')
    .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });

describe('the decoy for unknown client ids', () => {
  it('plain and sha256 secrets only: one SHA-256, as a registered check', async () => {
    const registry = new StaticClientRegistry([
      ...CLIENTS,
      { ...CLIENTS[1]!, clientId: 'hashed', clientSecret: undefined, clientSecretHash: await hashClientSecret('x') },
    ]);
    expect(decoyKind(registry)).toBe('sha256');
  });

  it('a static registry with scrypt secrets: priced as scrypt from the start', async () => {
    expect(decoyKind(new StaticClientRegistry([...CLIENTS, await scryptClient()]))).toBe('scrypt');
  });

  it('a custom registry: the kinds are learnt from the clients it returns', async () => {
    const human = await scryptClient();
    const inner = new StaticClientRegistry([...CLIENTS, human]);
    const custom: ClientRegistry = { find: (id) => inner.find(id) };
    expect(decoyKind(custom)).toBe('sha256');
    const from = (clientId: string) => ({ clientId, req: { ip: '192.0.2.1' } });
    expect(await verifySecret(custom, from('human'), await custom.find('human'), 'wrong')).toEqual({ known: human });
    expect(decoyKind(custom)).toBe('scrypt');
    expect(await verifySecret(custom, from('nobody'), await custom.find('nobody'), 'a person chose this')).toEqual({});
  });

  it('100 requests with unknown ids beside a scrypt client run no scrypt at all; 401 each', async () => {
    const human = await scryptClient();
    const { app } = createTestGateway({ clients: [...CLIENTS, human], rateLimits: false });
    // One real check first, so the decoy has a measured duration to draw from (no calibration derivation).
    expect((await bcAuthorize(app, basic('human', 'a person chose this'))).status).toBe(200);
    const before = scryptLimiter.computed;
    const unknown = (i: number) => bcAuthorize(app, basic(`nobody-${i}`, 'a person chose this'));
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => unknown(i)));
    expect(answers.map((r) => r.status)).toEqual(Array(100).fill(401));
    expect(scryptLimiter.computed - before).toBe(0);
  });

  it('with no real check seen yet, a burst of decoys costs one calibration derivation in all', async () => {
    const limiter = new ScryptLimiter();
    await Promise.all(Array.from({ length: 20 }, () => limiter.decoy()));
    expect(limiter.computed).toBe(1);
    await Promise.all(Array.from({ length: 20 }, () => limiter.decoy()));
    expect(limiter.computed).toBe(1);
  });

  it('past the limit and its queue: 503 with Retry-After, for known and unknown ids', async () => {
    const human = await scryptClient();
    const { app } = createTestGateway({ clients: [...CLIENTS, human], rateLimits: false });
    expect((await bcAuthorize(app, basic('human', 'a person chose this'))).status).toBe(200);
    // Derivations held until released: 1 runs, 2 wait, every further check is refused.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held: Derive = async (...args) => {
      await gate;
      return deriveScrypt(...args);
    };
    scryptLimiter.configure({ concurrency: 1, queue: 2, derive: held });
    try {
      const before = { computed: scryptLimiter.computed, refused: scryptLimiter.refused };
      // `then` sends each now; each counts once it reached the limiter: running, waiting, or refused.
      const guess = (i: number) => bcAuthorize(app, basic('human', `guess ${i}`)).then((r) => r);
      const guesses = Array.from({ length: 10 }, (_, i) => guess(i));
      const arrived = () =>
        scryptLimiter.computed - before.computed + scryptLimiter.queued + scryptLimiter.refused - before.refused;
      await vi.waitFor(() => expect(arrived()).toBe(10), { timeout: 20_000 });
      const unknown = await bcAuthorize(app, basic('nobody', 'guess'));
      release();
      const answers = [...(await Promise.all(guesses)), unknown];
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([...Array(3).fill(401), ...Array(8).fill(503)]);
      for (const res of answers.filter((r) => r.status === 503)) {
        expect(res.body.error).toBe('temporarily_unavailable');
        expect(res.headers['retry-after']).toBe('1');
      }
      expect(scryptLimiter.computed - before.computed).toBe(3);
    } finally {
      scryptLimiter.configure({ ...SCRYPT_DEFAULTS, derive: deriveScrypt });
    }
  });

  it('at the endpoint: an unknown id is 401 as before, the scrypt client authenticates', async () => {
    const human = await scryptClient();
    const { app } = createTestGateway({ clients: [...CLIENTS, human], rateLimits: false });
    const post = (authorization: string) =>
      request(app)
        .post('/apigateway/bc-authorize')
        .set('Authorization', authorization)
        .type('form')
        .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect((await post(basic('nobody', 'a person chose this'))).status).toBe(401);
    expect((await post(basic('human', 'a person chose this'))).status).toBe(200);
  });

  it.each(['client_secret_basic', 'client_secret_post'] as const)(
    'asks the registry once per %s request, lock-out on (it keys the slot and the check by what it found)',
    async (method) => {
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
          ? await request(app)
              .post('/apigateway/bc-authorize')
              .set('Authorization', basic(clientId, clientSecret!))
              .type('form')
              .send(form)
          : await request(app)
              .post('/apigateway/bc-authorize')
              .type('form')
              .send({ ...form, client_id: clientId, client_secret: clientSecret! });
      expect(res.status).toBe(200);
      expect(asked).toEqual([clientId]);
    },
  );
});
