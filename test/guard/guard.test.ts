import { describe, expect, it } from 'vitest';
import request from 'supertest';
import express from 'express';
import { createTestGateway, SIM_SWAP } from '../helpers/gateway.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';
import { KEY_A } from '../helpers/keys.js';

async function tokenFor(app: Parameters<typeof pollToken>[0], scope = SIM_SWAP): Promise<string> {
  return (await pollToken(app, await startBackchannel(app, 'tel:+34600000001', scope))).body.access_token as string;
}

describe('service-API guard', () => {
  it('lets a valid token through and hands the route subscriber, client and purpose', async () => {
    const { app } = createTestGateway();
    const res = await request(app)
      .post('/sim-swap/check')
      .set('Authorization', `Bearer ${await tokenFor(app)}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      swapped: false,
      subscriber: 'sub-alice',
      clientId: 'app-1',
      purpose: 'FraudPreventionAndDetection',
    });
  });

  it('accepts the scheme in any case', async () => {
    const { app } = createTestGateway();
    expect(
      (
        await request(app)
          .post('/sim-swap/check')
          .set('Authorization', `bearer ${await tokenFor(app)}`)
      ).status,
    ).toBe(200);
  });

  it('no token: 401 with realm-only challenges, Bearer and DPoP (RFC 9449 §7.1)', async () => {
    const { app } = createTestGateway();
    const res = await request(app).post('/sim-swap/check');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="http://gateway.test/apigateway", scope="sim-swap", DPoP realm="http://gateway.test/apigateway", scope="sim-swap", algs="RS256 PS256 ES256 ES384 EdDSA"',
    );
    expect(res.text).toBe('');
    const basicInstead = await request(app).post('/sim-swap/check').set('Authorization', 'Basic abc');
    expect(basicInstead.status).toBe(401);
    expect(basicInstead.headers['www-authenticate']).not.toContain('error=');
  });

  it('an unknown token: 401 invalid_token', async () => {
    const { app } = createTestGateway();
    const res = await request(app).post('/sim-swap/check').set('Authorization', 'Bearer not-a-token');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="[^"]+", error="invalid_token"/);
    expect(res.body.error).toBe('invalid_token');
  });

  it('an expired token: 401 invalid_token', async () => {
    const { app, clock } = createTestGateway();
    const token = await tokenFor(app);
    clock.advance(3600);
    const res = await request(app).post('/sim-swap/check').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('a token for another scope: 403 insufficient_scope', async () => {
    const { app } = createTestGateway();
    const res = await request(app)
      .get('/location')
      .set('Authorization', `Bearer ${await tokenFor(app)}`);
    expect(res.status).toBe(403);
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(res.headers['www-authenticate']).toContain('scope="device-location"');
    expect(res.body.error).toBe('insufficient_scope');
  });

  it('checks the purpose when the route names one', async () => {
    const { app, netauth } = createTestGateway();
    app.post(
      '/verify',
      netauth.guard({ scope: 'sim-swap', purpose: 'RequestedServiceProvision' }),
      (_req, res) => void res.json({}),
    );
    const res = await request(app)
      .post('/verify')
      .set('Authorization', `Bearer ${await tokenFor(app)}`);
    expect(res.status).toBe(403);
  });

  it('a malformed Authorization header: 400 invalid_request', async () => {
    const { app } = createTestGateway();
    const res = await request(app).post('/sim-swap/check').set('Authorization', 'Bearer two tokens');
    expect(res.status).toBe(400);
    expect(res.headers['www-authenticate']).toContain('error="invalid_request"');
  });

  // Express resets a request's prototype when a mounted application hands it back: req.netauth must stay.
  it('req.netauth: set for the admitted request only, writable by the app, and still there after a mounted app hands the request back', async () => {
    const { app, netauth } = createTestGateway();
    const token = await tokenFor(app);
    // A guard inside a mounted application; the parent answers after the sub-application passes the request on
    // (Express then gives the request its parent's prototype back).
    const service = express();
    service.use(netauth.guard({ scope: 'sim-swap' }), (_req, _res, next) => next());
    app.use('/svc', service);
    app.use('/svc', (req, res) => void res.json({ subscriber: req.netauth?.subscriber.id ?? null }));
    app.get('/open', (req, res) => {
      const before = req.netauth;
      req.netauth = {
        subscriber: { id: 'set-by-app' },
        clientId: 'c',
        purpose: 'p',
        scopes: [],
        scope: '',
        expiresAt: 0,
      };
      res.json({ before: before ?? null, after: req.netauth.subscriber.id });
    });
    expect((await request(app).get('/svc/x').set('Authorization', `Bearer ${token}`)).body).toEqual({
      subscriber: 'sub-alice',
    });
    expect((await request(app).get('/open').set('Authorization', `Bearer ${token}`)).body).toEqual({
      before: null,
      after: 'set-by-app',
    });
    // Admitted on one request, absent on the next on the same connection's app.
    expect((await request(app).post('/sim-swap/check').set('Authorization', `Bearer ${token}`)).body.subscriber).toBe(
      'sub-alice',
    );
    expect((await request(app).get('/open')).body.before).toBeNull();
  });

  it("req.netauth goes through another copy's accessor when that one was installed first (the CommonJS build beside the ES module)", async () => {
    // Express's base request prototype, shared by every app of this Express copy: restored afterwards.
    const base = express.request as object;
    const saved = Object.getOwnPropertyDescriptor(base, 'netauth');
    const foreign = new WeakMap<object, unknown>();
    Object.defineProperty(base, 'netauth', {
      configurable: true,
      get(this: object) {
        return foreign.get(this);
      },
      set(this: object, value: unknown) {
        foreign.set(this, value);
      },
    });
    try {
      const { app, netauth } = createTestGateway();
      app.get('/other-copy', netauth.guard({ scope: 'sim-swap' }), (req, res) => {
        res.json({
          seen: req.netauth?.subscriber.id ?? null,
          foreign: (foreign.get(req) as { subscriber?: { id: string } } | undefined)?.subscriber?.id ?? null,
        });
      });
      const token = await tokenFor(app);
      // Twice: the second request takes the path decided for this prototype on the first.
      for (let i = 0; i < 2; i++) {
        expect((await request(app).get('/other-copy').set('Authorization', `Bearer ${token}`)).body).toEqual({
          seen: 'sub-alice',
          foreign: 'sub-alice',
        });
      }
    } finally {
      delete (base as { netauth?: unknown }).netauth;
      if (saved) Object.defineProperty(base, 'netauth', saved);
    }
  });
});

describe('the admission pipeline stays in the request turn where it can', () => {
  /** The guard at `/turn`, and whether it called `next` before it returned (the route then runs in that turn). */
  function turnRoute(gw: ReturnType<typeof createTestGateway>): void {
    const guard = gw.netauth.guard({ scope: 'sim-swap' });
    gw.app.get(
      '/turn',
      (req, res, next) => {
        let inTurn = true;
        guard(req, res, () => {
          res.locals.inTurn = inTurn;
          next();
        });
        inTurn = false;
      },
      (_req, res) => void res.json({ inTurn: res.locals.inTurn }),
    );
  }

  it('a JWT access token verified here, its markers read in the last seconds: admitted in the same turn', async () => {
    const gw = createTestGateway({ accessTokenFormat: 'jwt', signingKeys: [KEY_A] });
    turnRoute(gw);
    const token = await tokenFor(gw.app);
    const call = () => request(gw.app).get('/turn').set('Authorization', `Bearer ${token}`);
    // The token's issue read the subscriber's and client's markers; once their 5 seconds are past, one call reads
    // them again from the store, and the next ones are answered from memory.
    expect((await call()).body).toEqual({ inTurn: true });
    gw.clock.advance(5);
    expect((await call()).body).toEqual({ inTurn: false });
    expect((await call()).body).toEqual({ inTurn: true });
  });

  it('an opaque token waits for the store', async () => {
    const gw = createTestGateway();
    turnRoute(gw);
    const token = await tokenFor(gw.app);
    const call = () => request(gw.app).get('/turn').set('Authorization', `Bearer ${token}`);
    expect((await call()).body).toEqual({ inTurn: false });
    expect((await call()).body).toEqual({ inTurn: false });
  });
});
