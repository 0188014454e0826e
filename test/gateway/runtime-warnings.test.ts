import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import express from 'express';
import pino from 'pino';
import request from 'supertest';
import { RedisStore, createNetAuth, type NetAuthOptions } from '../../lib/index.js';
import { authorize } from '../helpers/frontend.js';
import { APP1, CLIENTS, ISSUER, MOBILE_RANGES, POLICY, SUBSCRIBERS, createTestGateway } from '../helpers/gateway.js';

/**
 * What can only be seen once requests come (issue 33's first-day frictions), said once each through the
 * package's logger with a stable code: the router mounted away from the issuer's path, the port header from a
 * hop `trust proxy` does not trust, a store that cannot be reached (requests answered 503).
 */

interface LogLine {
  level: number;
  option?: string;
  warning?: string;
  msg: string;
}

function memoryLogger(): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

const coded = (lines: LogLine[], code: string) => lines.filter((l) => l.warning === code);

function options(overrides: Partial<NetAuthOptions>): NetAuthOptions {
  return {
    issuer: ISSUER,
    clients: CLIENTS,
    subscribers: SUBSCRIBERS,
    consentPolicy: POLICY,
    pairwiseSalt: 'test-gateway-salt',
    ...overrides,
  };
}

describe('warnings said once, at the first request that shows them', () => {
  it('the router mounted away from the issuer path: one warning naming both paths and the fix', async () => {
    const { logger, lines } = memoryLogger();
    const netauth = createNetAuth(options({ logger }));
    const app = express();
    app.use('/gateway', netauth.router);
    const discovery = await request(app).get('/gateway/.well-known/openid-configuration');
    expect(discovery.status).toBe(200);
    await request(app).get('/gateway/.well-known/openid-configuration');
    const warned = coded(lines, 'NETAUTH_MOUNT_PATH_MISMATCH');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, option: 'issuer' });
    expect(warned[0]!.msg).toContain("the router is mounted at '/gateway' but the issuer");
    expect(warned[0]!.msg).toContain("app.use('/apigateway', netauth.router)");

    // Mounted at the root for an issuer with a path: said too, whatever path the first request names.
    const root = memoryLogger();
    const atRoot = express();
    atRoot.use(createNetAuth(options({ logger: root.logger })).router);
    expect((await request(atRoot).get('/apigateway/token')).status).toBe(404);
    expect(coded(root.lines, 'NETAUTH_MOUNT_PATH_MISMATCH')[0]!.msg).toContain("mounted at '/'");

    // At the issuer's path (in any case, as Express matches): nothing said.
    const right = memoryLogger();
    const mounted = express();
    mounted.use('/apigateway', createNetAuth(options({ logger: right.logger })).router);
    await request(mounted).get('/APIGATEWAY/.well-known/openid-configuration');
    expect(coded(right.lines, 'NETAUTH_MOUNT_PATH_MISMATCH')).toEqual([]);
  });

  it('the port header from a hop trust proxy does not trust: ignored, and said once naming trust proxy', async () => {
    const { logger, lines } = memoryLogger();
    const network = { mobileRanges: MOBILE_RANGES, portHeader: 'x-source-port' };
    // supertest connects from loopback, which this trust proxy does not name.
    const gw = createTestGateway({ logger, network }, { trustProxy: '10.0.0.10' });
    for (let i = 0; i < 2; i++) await authorize(gw.app, {}, { port: '40001' });
    const warned = coded(lines, 'NETAUTH_PORT_HEADER_UNTRUSTED');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, option: 'network.portHeader' });
    expect(warned[0]!.msg).toMatch(/x-source-port.*trust proxy does not trust, so it is ignored/);
    expect(warned[0]!.msg).toContain("app.set('trust proxy'");
    // No address in it: the peer may be a subscriber's device.
    expect(warned[0]!.msg).not.toMatch(/127\.0\.0\.1|::1/);

    // From a trusted hop, or without the header: nothing said.
    const trusted = memoryLogger();
    const ok = createTestGateway({ logger: trusted.logger, network });
    await authorize(ok.app, {}, { port: '40001' });
    const quiet = memoryLogger();
    const none = createTestGateway({ logger: quiet.logger, network }, { trustProxy: '10.0.0.10' });
    await authorize(none.app);
    expect([...trusted.lines, ...quiet.lines].filter((l) => l.warning?.startsWith('NETAUTH_PORT_HEADER'))).toEqual([]);
  });

  it('X-Forwarded-For while trust proxy is not set: every device is access_denied, said once naming trust proxy', async () => {
    const { logger, lines } = memoryLogger();
    // The edge reports Alice's phone in X-Forwarded-For; the app trusts no proxy, so req.ip is the edge's.
    const gw = createTestGateway({ logger }, { trustProxy: false });
    for (let i = 0; i < 2; i++) {
      const res = await authorize(gw.app);
      expect(new URL(res.headers.location!).searchParams.get('error')).toBe('access_denied');
    }
    const warned = coded(lines, 'NETAUTH_FORWARDED_FOR_UNTRUSTED');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, option: 'network' });
    expect(warned[0]!.msg).toContain('X-Forwarded-For but the app does not set trust proxy');
    expect(warned[0]!.msg).toContain("app.set('trust proxy'");
    expect(warned[0]!.msg).not.toMatch(/127\.0\.0\.1|::1|10\.20\./);

    // trust proxy set (the device identified), or no X-Forwarded-For: nothing said.
    const trusted = memoryLogger();
    const ok = createTestGateway({ logger: trusted.logger });
    expect((await authorize(ok.app)).status).toBe(302);
    const direct = memoryLogger();
    const none = createTestGateway({ logger: direct.logger }, { trustProxy: false });
    await authorize(none.app, {}, { ip: '' });
    expect([...trusted.lines, ...direct.lines].filter((l) => l.warning === 'NETAUTH_FORWARDED_FOR_UNTRUSTED')).toEqual(
      [],
    );
  });

  describe('a store that cannot be reached, never opened', () => {
    const stores: RedisStore[] = [];
    afterAll(async () => {
      for (const store of stores) await store.close();
    });

    /** A loopback port nothing listens on. */
    async function closedPort(): Promise<number> {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      await new Promise<void>((resolve) => server.close(() => resolve()));
      return port;
    }

    it('every request is 503 and one error names the store and open()', async () => {
      const { logger, lines } = memoryLogger();
      const store = new RedisStore({ url: `redis://127.0.0.1:${await closedPort()}`, timeout: 300 });
      stores.push(store);
      const gw = createTestGateway({ logger, store, rateLimits: false });
      const bc = () =>
        request(gw.app)
          .post('/apigateway/bc-authorize')
          .set('Authorization', APP1)
          .type('form')
          .send({ login_hint: 'tel:+34600000001', scope: 'dpv:FraudPreventionAndDetection#sim-swap' });
      for (let i = 0; i < 2; i++) expect((await bc()).status).toBe(503);
      const guarded = await request(gw.app).post('/sim-swap/check').set('Authorization', 'Bearer some-token');
      expect(guarded.status).toBe(503);
      const said = coded(lines, 'NETAUTH_STORE_UNAVAILABLE');
      expect(said).toHaveLength(1);
      expect(said[0]).toMatchObject({ level: 50, option: 'store' });
      expect(said[0]!.msg).toContain('the store (RedisStore, Redis at 127.0.0.1:');
      expect(said[0]!.msg).toContain('await store.open()');
    });

    // Issue 44: with the default rate limits, the lock-out's counters (on the store) answered the 503 first and
    // the line came only once a request got past them.
    it.each([
      [
        'bc-authorize',
        '/apigateway/bc-authorize',
        { login_hint: 'tel:+34600000001', scope: 'dpv:FraudPreventionAndDetection#sim-swap' },
      ],
      [
        'token',
        '/apigateway/token',
        { grant_type: 'authorization_code', code: 'some-code', redirect_uri: 'https://app.example/callback' },
      ],
    ])('with the default rate limits: said at the first failing request (%s)', async (_name, path, form) => {
      const { logger, lines } = memoryLogger();
      const store = new RedisStore({ url: `redis://127.0.0.1:${await closedPort()}`, timeout: 300 });
      stores.push(store);
      const gw = createTestGateway({ logger, store });
      const res = await request(gw.app).post(path).set('Authorization', APP1).type('form').send(form);
      expect(res.status).toBe(503);
      const said = coded(lines, 'NETAUTH_STORE_UNAVAILABLE');
      expect(said).toHaveLength(1);
      expect(said[0]!.msg).toContain('the store (RedisStore, Redis at 127.0.0.1:');
      await request(gw.app).post(path).set('Authorization', APP1).type('form').send(form);
      expect(coded(lines, 'NETAUTH_STORE_UNAVAILABLE')).toHaveLength(1);
    });

    it('said once per outage: a failure a minute after the last one is a new outage, said again', async () => {
      const { logger, lines } = memoryLogger();
      const store = new RedisStore({ url: `redis://127.0.0.1:${await closedPort()}`, timeout: 300 });
      stores.push(store);
      const gw = createTestGateway({ logger, store, rateLimits: false });
      const guarded = () => request(gw.app).post('/sim-swap/check').set('Authorization', 'Bearer some-token');
      for (let i = 0; i < 3; i++) {
        expect((await guarded()).status).toBe(503);
        gw.clock.advance(30);
      }
      // Failures 30 s apart are one outage.
      expect(coded(lines, 'NETAUTH_STORE_UNAVAILABLE')).toHaveLength(1);
      gw.clock.advance(31);
      expect((await guarded()).status).toBe(503);
      expect(coded(lines, 'NETAUTH_STORE_UNAVAILABLE')).toHaveLength(2);
    });
  });
});
