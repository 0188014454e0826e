import type { AddressInfo } from 'node:net';
import { SCRYPT_DEFAULTS } from '../../../lib/defaults.js';
import { scryptLimiter } from '../../../lib/registry/scrypt.js';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { APP1, APP2, CIBA, CLIENTS, SECRET, SIM_SWAP, basic } from '../../helpers/gateway.js';
import { recordEvents } from '../../helpers/events.js';
import { describeEachBackend, expectTooMany, only, windowPassed } from '../../helpers/rate-limits.js';
import {
  RATE_LIMIT_DEFAULTS,
  StaticClientRegistry,
  hashClientSecret,
  type ClientRegistry,
  type FailureLimitRule,
} from '../../../lib/index.js';

/**
 * Brute-force protection on client authentication (docs/protocol.md, client authentication): refused
 * credentials count per (registered client id, source address), and per address for ids that name no client;
 * a client's own requests from an address that has not failed are always served; concurrent guesses never get
 * more comparisons than the budget; a registry that normalises ids cannot be used to escape a lock.
 */

const ALICE = 'tel:+34600000001';
const body = { login_hint: ALICE, scope: SIM_SWAP };

const from = (app: Express, ip: string, authorization: string, extra: Record<string, string> = {}) =>
  request(app)
    .post('/apigateway/bc-authorize')
    .set('X-Forwarded-For', ip)
    .set('Authorization', authorization)
    .type('form')
    .send({ ...body, ...extra });

const pairs = (rule: FailureLimitRule) => ({
  rateLimits: only({ clientAuthentication: { perClientAndAddress: rule } }),
});

describeEachBackend('client-authentication lock-out', (backend) => {
  describe('lock-out per (client id, address)', () => {
    it('after the failures, 429 from that address even with the right credentials, on every endpoint; elsewhere, and for other clients, served', async () => {
      const { app, netauth } = backend.gateway(pairs({ failures: 3, duration: 900 }));
      const events = recordEvents(netauth);
      for (let i = 0; i < 3; i++)
        expect((await from(app, '203.0.113.7', basic('app-1', `guess-${i}`))).status).toBe(401);
      expectTooMany(await from(app, '203.0.113.7', APP1), 900);
      expectTooMany(await from(app, '203.0.113.7', basic('app-1', 'guess-4')), 900);
      const at7 = (path: string, form: Record<string, string>) =>
        request(app)
          .post(path)
          .set('X-Forwarded-For', '203.0.113.7')
          .set('Authorization', APP1)
          .type('form')
          .send(form);
      expectTooMany(await at7('/apigateway/token', { grant_type: CIBA, auth_req_id: 'x' }), 900);
      expectTooMany(await at7('/apigateway/introspect', { token: 'x' }), 900);
      expect((await from(app, '203.0.113.8', APP1)).status).toBe(200);
      expect((await from(app, '203.0.113.7', APP2)).status).toBe(200);
      expect(events.of('rate.limited')).toHaveLength(4);
      expect(events.of('rate.limited')[0]).toEqual({
        endpoint: 'bc-authorize',
        limit: 'client_authentication',
        clientId: 'app-1',
        retryAfter: expect.any(Number),
      });
      expect(events.of('client.authentication_failed')).toHaveLength(3);
    });

    it('a third party cannot lock a client out: 50 wrong secrets for its id from a few addresses, and its own requests are served', async () => {
      const { app } = backend.gateway();
      // 50 guesses from five addresses, each staying under the per-address budget (30 by default).
      const guesses = ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4', '198.51.100.5'].flatMap((ip) =>
        Array.from({ length: 10 }, () => ip),
      );
      for (const ip of guesses) expect((await from(app, ip, basic('app-1', 'wrong'))).status).toBe(401);
      // The client, from its own address: served, every time.
      for (let i = 0; i < 5; i++) expect((await from(app, '192.0.2.10', APP1)).status).toBe(200);
      // Each guessing address keeps the rest of its budget for that id, and is locked once it spends it.
      for (let i = 0; i < 20; i++) expect((await from(app, '198.51.100.1', basic('app-1', 'wrong'))).status).toBe(401);
      expectTooMany(await from(app, '198.51.100.1', APP1), 900);
      expect((await from(app, '192.0.2.10', APP1)).status).toBe(200);
      expect(RATE_LIMIT_DEFAULTS.clientAuthentication).toMatchObject({ perClientAndAddress: { failures: 30 } });
    });

    it('successes do not count, nor do missing credentials or a client_id mismatch; only refused credentials do', async () => {
      const { app } = backend.gateway(pairs({ failures: 2, duration: 900 }));
      for (let i = 0; i < 5; i++) expect((await from(app, '192.0.2.1', APP1)).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        expect(
          (
            await request(app)
              .post('/apigateway/bc-authorize')
              .set('X-Forwarded-For', '192.0.2.1')
              .type('form')
              .send(body)
          ).status,
        ).toBe(401);
        expect((await from(app, '192.0.2.1', APP1, { client_id: 'app-2' })).status).toBe(401);
      }
      expect((await from(app, '192.0.2.1', basic('app-1', 'wrong'))).status).toBe(401);
      expect((await from(app, '192.0.2.1', APP1)).status).toBe(200);
      expect((await from(app, '192.0.2.1', basic('app-1', 'wrong'))).status).toBe(401);
      expectTooMany(await from(app, '192.0.2.1', APP1), 900);
    });

    it('the lock lasts until the window passes', async () => {
      const gw = backend.gateway(pairs({ failures: 1, duration: 1 }));
      expect((await from(gw.app, '192.0.2.9', basic('app-1', 'wrong'))).status).toBe(401);
      expectTooMany(await from(gw.app, '192.0.2.9', APP1), 1);
      await windowPassed(backend, gw, 1);
      expect((await from(gw.app, '192.0.2.9', APP1)).status).toBe(200);
    });

    it("counts by the registry's canonical id: case variants of a locked id in a registry that normalises ids are the same client", async () => {
      const registry = new StaticClientRegistry(CLIENTS);
      const normalising: ClientRegistry = { find: (clientId) => registry.find(clientId.toLowerCase()) };
      const { app } = backend.gateway({ clients: normalising, ...pairs({ failures: 3, duration: 900 }) });
      expect((await from(app, '192.0.2.20', basic('App-1', SECRET))).status).toBe(200);
      for (const variant of ['APP-1', 'App-1', 'aPp-1'])
        expect((await from(app, '192.0.2.20', basic(variant, 'wrong'))).status).toBe(401);
      expectTooMany(await from(app, '192.0.2.20', basic('apP-1', 'wrong')), 900);
      expectTooMany(await from(app, '192.0.2.20', basic('app-1', SECRET)), 900);
      expect((await from(app, '192.0.2.21', basic('APP-1', SECRET))).status).toBe(200);
    });
  });

  describe('lock-out per address, for ids that name no client', () => {
    it('429 for unknown ids from that address; registered clients from it are still served', async () => {
      const { app } = backend.gateway({
        rateLimits: only({ clientAuthentication: { perAddress: { failures: 3, duration: 900 } } }),
      });
      for (let i = 0; i < 3; i++)
        expect((await from(app, '198.51.100.60', basic(`nobody-${i}`, 'wrong'))).status).toBe(401);
      expectTooMany(await from(app, '198.51.100.60', basic('someone-else', 'wrong')), 900);
      expect((await from(app, '198.51.100.60', APP1)).status).toBe(200);
      expect((await from(app, '198.51.100.61', basic('nobody-4', 'wrong'))).status).toBe(401);
    });

    it('by default: 30 per address, then 429 for unknown ids', async () => {
      const { app } = backend.gateway();
      for (let i = 0; i < RATE_LIMIT_DEFAULTS.clientAuthentication.perAddress.failures; i++) {
        expect((await from(app, '192.0.2.77', basic('nobody', 'x'))).status).toBe(401);
      }
      expectTooMany(await from(app, '192.0.2.77', basic('nobody', 'x')), 900);
      expect((await from(app, '192.0.2.77', APP1)).status).toBe(200);
    });
  });

  describe('concurrent guesses never get more comparisons than the budget', () => {
    // A listening server, so 500 requests are really in flight at once.
    let server: Server;
    let origin: string;
    let failed: number;
    const budget = 30;
    const rule = { failures: budget, duration: 900 };

    beforeAll(async () => {
      const client = {
        ...CLIENTS[1]!,
        clientSecret: undefined,
        clientSecretHash: await hashClientSecret('other-secret', 'scrypt'),
      };
      const gw = backend.gateway({
        clients: [CLIENTS[0]!, client],
        rateLimits: { clientAuthentication: { perClientAndAddress: rule, perAddress: rule } },
      });
      failed = 0;
      // The lock-out alone is under test: no check waits on the scrypt limit (its 503 is decoy.test.ts's).
      scryptLimiter.configure({ queue: 1000 });
      gw.netauth.events.on('client.authentication_failed', () => {
        failed++;
      });
      server = gw.app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      scryptLimiter.configure({ queue: SCRYPT_DEFAULTS.queue });
      await new Promise((resolve) => server.close(resolve));
    });

    const post = (ip: string, authorization: string, path = 'bc-authorize', form: Record<string, string> = body) =>
      fetch(`${origin}/apigateway/${path}`, {
        method: 'POST',
        headers: { 'x-forwarded-for': ip, authorization, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });

    // A generous timeout: where every guess is compared (the defect this guards against), 500 scrypt derivations take a while.
    it('500 parallel wrong guesses against a scrypt secret: at most the budget compared (401), the rest 429; then the right secret from there is 429 too', {
      timeout: 60_000,
    }, async () => {
      const answers = await Promise.all(
        Array.from({ length: 500 }, (_, i) => post('203.0.113.50', basic('app-2', `guess-${i}`)).then((r) => r.status)),
      );
      const compared = answers.filter((s) => s === 401).length;
      expect(compared).toBe(budget);
      expect(failed).toBe(budget);
      expect(answers.filter((s) => s === 429)).toHaveLength(500 - budget);
      expect((await post('203.0.113.50', APP2)).status).toBe(429);
      // The client elsewhere is served.
      expect((await post('203.0.113.51', APP2)).status).toBe(200);
    });

    it("a burst of the client's own correct requests, larger than the budget, is served in full", async () => {
      // Introspection: no per-subscriber limit in the way, only client authentication.
      const answers = await Promise.all(
        Array.from({ length: 3 * budget }, () =>
          post('203.0.113.52', APP2, 'introspect', { token: 'x' }).then((r) => r.status),
        ),
      );
      expect(answers.every((s) => s === 200)).toBe(true);
    });
  });
});
