import { describe, expect, it } from 'vitest';
import request from 'supertest';
import express, { type Request } from 'express';
import {
  MemoryStore,
  StaticSubscriberDirectory,
  StoreUnavailableError,
  type JsonObject,
  type RecordKind,
  type StoredRecord,
  type SubscriberDirectory,
} from '../../lib/index.js';
import { deviceIdentification } from '../../lib/guard/device.js';
import { SIM_SWAP, SUBSCRIBERS, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';

/**
 * The guard in CAMARA mode (Commonalities API Design Guide): `{status, code, message}` bodies for each code the
 * guard answers, the `x-correlator` echo in both formats, and device identification (§3.2.2, Appendix A), each
 * over real HTTP through the real router and guard.
 */

const GENERIC_401 = {
  status: 401,
  code: 'UNAUTHENTICATED',
  message:
    'Request not authenticated due to missing, invalid, or expired credentials. A new authentication is required.',
};

/** The fixture with CAMARA-mode routes: the device in the body's `device`, in its `phoneNumber`, confirmable, or never. */
function camaraGateway(overrides: Parameters<typeof createTestGateway>[0] = {}): TestGateway {
  const gw = createTestGateway(overrides);
  const echo = (req: Request, res: express.Response) =>
    void res.json({ device: req.netauth?.device, body: req.body as unknown });
  gw.app.post('/camara/device', gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: true }), echo);
  gw.app.post(
    '/camara/phone',
    gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: { identifier: 'phoneNumber' } }),
    echo,
  );
  gw.app.post(
    '/camara/confirm',
    gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: { confirm: true } }),
    echo,
  );
  gw.app.post(
    '/camara/token-only',
    gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: { identifier: 'none' } }),
    echo,
  );
  gw.app.get(
    '/camara/location',
    gw.netauth.guard({ scope: 'device-location', errorFormat: 'camara' }),
    (_req, res) => void res.json({}),
  );
  // A route whose own parser ran first: the guard reads what it parsed.
  gw.app.post(
    '/camara/parsed',
    express.json(),
    gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: true }),
    echo,
  );
  return gw;
}

async function tokenFor(gw: TestGateway, hint = 'tel:+34600000001', scope = SIM_SWAP): Promise<string> {
  return (await pollToken(gw.app, await startBackchannel(gw.app, hint, scope))).body.access_token as string;
}

describe('guard errorFormat camara: the Commonalities codes', () => {
  it('401 UNAUTHENTICATED, the generic one whatever failed, with the same challenges as the OAuth format', async () => {
    const gw = camaraGateway();
    const none = await request(gw.app).post('/camara/device');
    const invalid = await request(gw.app).post('/camara/device').set('Authorization', 'Bearer not-a-token');
    const malformed = await request(gw.app).post('/camara/device').set('Authorization', 'Bearer two tokens');
    const unbound = await request(gw.app)
      .post('/camara/device')
      .set('Authorization', `DPoP ${await tokenFor(gw)}`);
    for (const res of [none, invalid, malformed, unbound]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(GENERIC_401);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['www-authenticate']).toMatch(
        /^Bearer realm="http:\/\/gateway.test\/apigateway".*, DPoP realm=.*algs="RS256 PS256 ES256 ES384 EdDSA"$/,
      );
    }
    expect(invalid.headers['www-authenticate']).toContain(
      'Bearer realm="http://gateway.test/apigateway", error="invalid_token"',
    );
    expect(malformed.headers['www-authenticate']).toContain('error="invalid_request"');
    expect(unbound.headers['www-authenticate']).toContain(
      'DPoP realm="http://gateway.test/apigateway", error="invalid_token"',
    );
  });

  it('403 PERMISSION_DENIED for a token without the scope', async () => {
    const gw = camaraGateway();
    const res = await request(gw.app)
      .get('/camara/location')
      .set('Authorization', `Bearer ${await tokenFor(gw)}`);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      status: 403,
      code: 'PERMISSION_DENIED',
      message: 'Client does not have sufficient permissions to perform this action.',
    });
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
  });

  it('503 UNAVAILABLE when the store cannot be reached, with Retry-After and no challenge; 500 INTERNAL for a bug, reported', async () => {
    class FailingStore extends MemoryStore {
      failure: Error | undefined;
      override get<T extends JsonObject = JsonObject>(
        kind: RecordKind,
        id: string,
      ): Promise<StoredRecord<T> | undefined> {
        return this.failure && kind === 'access_token' ? Promise.reject(this.failure) : super.get<T>(kind, id);
      }
    }
    const store = new FailingStore();
    const reported: unknown[] = [];
    const gw = camaraGateway({ store, onError: (error) => reported.push(error) });
    const token = await tokenFor(gw);
    store.failure = new StoreUnavailableError('redis is failing over');
    const unavailable = await request(gw.app).post('/camara/device').set('Authorization', `Bearer ${token}`);
    expect(unavailable.status).toBe(503);
    expect(unavailable.body).toEqual({ status: 503, code: 'UNAVAILABLE', message: 'Service Unavailable.' });
    expect(unavailable.headers['retry-after']).toBe('5');
    expect(unavailable.headers['www-authenticate']).toBeUndefined();
    store.failure = new Error('a bug');
    const internal = await request(gw.app).post('/camara/device').set('Authorization', `Bearer ${token}`);
    expect(internal.status).toBe(500);
    expect(internal.body).toEqual({
      status: 500,
      code: 'INTERNAL',
      message: 'Unknown server error. Typically a server bug.',
    });
    expect(reported).toEqual([store.failure]);
  });

  it('the OAuth format stays the default', async () => {
    const gw = camaraGateway();
    const res = await request(gw.app)
      .get('/location')
      .set('Authorization', `Bearer ${await tokenFor(gw)}`);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: 'insufficient_scope',
      error_description: 'the access token does not cover this API',
    });
  });

  it('device identification needs the CAMARA format: a start-up error naming the fix', () => {
    const gw = createTestGateway();
    expect(() => gw.netauth.guard({ scope: 'sim-swap', device: true })).toThrow(
      "set errorFormat: 'camara' beside device",
    );
    expect(() => gw.netauth.guard({ errorFormat: 'json' as 'camara' })).toThrow(
      "guard errorFormat must be 'oauth' or 'camara'",
    );
    expect(() => gw.netauth.guard({ errorFormat: 'camara', device: { identifier: 'msisdn' as 'device' } })).toThrow(
      /device.identifier must be/,
    );
  });
});

describe('x-correlator', () => {
  const VALID = ['b4333c46-49c0-4f62-80d7-f0ef930f1c46', 'a:b;c.d/e<f>{g}_h-1', 'x'.repeat(256)];
  const INVALID = ['has space', 'quote"d', 'x'.repeat(257), '<script>alert(1)</script>', 'é'];

  it('a valid one is echoed on success and on every refusal, in both formats', async () => {
    const gw = camaraGateway();
    const token = await tokenFor(gw);
    for (const value of VALID) {
      for (const [path, auth] of [
        ['/sim-swap/check', token],
        ['/camara/device', token],
        ['/sim-swap/check', 'nope'],
        ['/camara/device', 'nope'],
      ] as const) {
        const res = await request(gw.app).post(path).set('Authorization', `Bearer ${auth}`).set('x-correlator', value);
        expect(res.status).toBe(auth === token ? 200 : 401);
        expect(res.headers['x-correlator']).toBe(value);
      }
    }
  });

  it('an invalid one is never reflected: the OAuth format serves the request without it, the CAMARA format answers 400 INVALID_ARGUMENT', async () => {
    const gw = camaraGateway();
    const token = await tokenFor(gw);
    for (const value of INVALID) {
      const oauth = await request(gw.app)
        .post('/sim-swap/check')
        .set('Authorization', `Bearer ${token}`)
        .set('x-correlator', value);
      expect(oauth.status).toBe(200);
      expect(oauth.headers['x-correlator']).toBeUndefined();
      const camara = await request(gw.app)
        .post('/camara/device')
        .set('Authorization', `Bearer ${token}`)
        .set('x-correlator', value);
      expect(camara.status).toBe(400);
      expect(camara.body).toEqual({
        status: 400,
        code: 'INVALID_ARGUMENT',
        message: 'x-correlator does not match its pattern.',
      });
      expect(camara.headers['x-correlator']).toBeUndefined();
      expect(camara.text).not.toContain(value);
    }
  });

  it('one sent twice is not echoed', async () => {
    const gw = camaraGateway();
    const res = await request(gw.app)
      .post('/sim-swap/check')
      .set('Authorization', `Bearer ${await tokenFor(gw)}`)
      .set('x-correlator', ['one', 'two'] as unknown as string);
    expect(res.status).toBe(200);
    expect(res.headers['x-correlator']).toBeUndefined();
  });
});

describe('device identification (Commonalities Appendix A)', () => {
  const ALICE = { id: 'sub-alice', phoneNumber: '+34600000001' };

  it('a three-legged token and no identifier: the token identifies the device, phone number included', async () => {
    const gw = camaraGateway();
    const token = await tokenFor(gw);
    for (const path of ['/camara/device', '/camara/phone', '/camara/confirm', '/camara/token-only', '/camara/parsed']) {
      const noBody = await request(gw.app).post(path).set('Authorization', `Bearer ${token}`);
      expect(noBody.status, path).toBe(200);
      expect(noBody.body.device).toEqual({ identifiedBy: 'token', subscriber: ALICE });
      const otherFields = await request(gw.app)
        .post(path)
        .set('Authorization', `Bearer ${token}`)
        .send({ maxAge: 240 });
      expect(otherFields.status, path).toBe(200);
      // `none` never reads the body: the route parses it if it needs it.
      expect(otherFields.body).toEqual({
        device: { identifiedBy: 'token', subscriber: ALICE },
        ...(path === '/camara/token-only' ? {} : { body: { maxAge: 240 } }),
      });
    }
  });

  it('an identifier beside a three-legged token: 422 UNNECESSARY_IDENTIFIER whether it matches or not', async () => {
    const gw = camaraGateway();
    const token = await tokenFor(gw);
    const bodies: Array<[string, object]> = [
      ['/camara/device', { device: { phoneNumber: '+34600000001' } }],
      ['/camara/device', { device: { phoneNumber: '+34600000002' } }],
      ['/camara/device', { device: { ipv4Address: { publicAddress: '10.20.0.1', publicPort: 5000 } } }],
      ['/camara/phone', { phoneNumber: '+34600000001' }],
      ['/camara/phone', { phoneNumber: '+34699999999' }],
    ];
    const answers = await Promise.all(
      bodies.map(([path, body]) => request(gw.app).post(path).set('Authorization', `Bearer ${token}`).send(body)),
    );
    for (const res of answers) {
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        status: 422,
        code: 'UNNECESSARY_IDENTIFIER',
        message: 'The device is already identified by the access token.',
      });
      expect(res.headers['www-authenticate']).toBeUndefined();
    }
  });

  it('where the API may confirm the match: the same device passes with its identifier, another is 403 INVALID_TOKEN_CONTEXT', async () => {
    const gw = camaraGateway();
    const token = await tokenFor(gw);
    const call = (device: object) =>
      request(gw.app).post('/camara/confirm').set('Authorization', `Bearer ${token}`).send({ device });
    const same = await call({ phoneNumber: '+34600000001', ipv6Address: '2001:db8::99' });
    expect(same.status).toBe(200);
    expect(same.body.device).toEqual({
      identifiedBy: 'token',
      subscriber: ALICE,
      identifier: { phoneNumber: '+34600000001' },
    });
    const byAddress = await call({ ipv4Address: { publicAddress: '10.20.0.1', privateAddress: '192.168.1.2' } });
    expect(byAddress.status).toBe(200);
    expect(byAddress.body.device.identifier).toEqual({
      ipv4Address: { publicAddress: '10.20.0.1', privateAddress: '192.168.1.2' },
    });
    for (const device of [
      { phoneNumber: '+34600000002' },
      { phoneNumber: '+34699999999' },
      { ipv4Address: { publicAddress: '10.20.0.2', publicPort: 1 } },
      { ipv6Address: '2001:db8::1:2' },
    ]) {
      const res = await call(device);
      expect(res.status, JSON.stringify(device)).toBe(403);
      expect(res.body).toEqual({
        status: 403,
        code: 'INVALID_TOKEN_CONTEXT',
        message: 'device is not consistent with access token.',
      });
    }
    const unsupported = await call({ networkAccessIdentifier: '123456789@example.com' });
    expect(unsupported.status).toBe(422);
    expect(unsupported.body).toEqual({
      status: 422,
      code: 'UNSUPPORTED_IDENTIFIER',
      message: 'The identifier provided is not supported.',
    });
  });

  it('a body that breaks the Commonalities schema: 400 INVALID_ARGUMENT, before any comparison', async () => {
    const gw = camaraGateway();
    const token = await tokenFor(gw);
    const call = (path: string, body: string | object) =>
      request(gw.app)
        .post(path)
        .set('Authorization', `Bearer ${token}`)
        .set('Content-Type', 'application/json')
        .send(body);
    const bad: Array<[string, string | object]> = [
      ['/camara/device', { device: {} }],
      ['/camara/device', { device: null }],
      ['/camara/device', { device: 'tel:+34600000001' }],
      ['/camara/device', { device: { phoneNumber: '34600000001' } }],
      ['/camara/device', { device: { ipv4Address: { publicAddress: '10.20.0.1' } } }],
      ['/camara/device', { device: { ipv4Address: { publicAddress: '010.20.0.1', publicPort: 80 } } }],
      ['/camara/device', { device: { ipv4Address: { publicAddress: '10.20.0.1', publicPort: 70000 } } }],
      ['/camara/device', { device: { ipv6Address: '10.20.0.1' } }],
      ['/camara/device', { device: { networkAccessIdentifier: '' } }],
      ['/camara/phone', { phoneNumber: 34600000001 }],
      ['/camara/device', '[1, 2]'],
      ['/camara/device', '{"device": '],
    ];
    for (const [path, body] of bad) {
      const res = await call(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('INVALID_ARGUMENT');
    }
    const tooLarge = await call('/camara/device', { device: { phoneNumber: '+34600000001' }, pad: 'x'.repeat(20_000) });
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.body).toEqual({ status: 400, code: 'INVALID_ARGUMENT', message: 'The request body is too large.' });
  });

  it("a JWT access token carries no phone number: the directory's findById supplies it, and without one the route gets the id alone", async () => {
    const jwt = camaraGateway({ accessTokenFormat: 'jwt' });
    const res = await request(jwt.app)
      .post('/camara/device')
      .set('Authorization', `Bearer ${await tokenFor(jwt)}`);
    expect(res.body.device).toEqual({ identifiedBy: 'token', subscriber: ALICE });
    const static_ = new StaticSubscriberDirectory(SUBSCRIBERS);
    const withoutFindById: SubscriberDirectory = {
      findByPhoneNumber: (n) => static_.findByPhoneNumber(n),
      findByNetworkAddress: (a) => static_.findByNetworkAddress(a),
    };
    const bare = camaraGateway({ accessTokenFormat: 'jwt', subscribers: withoutFindById });
    const idOnly = await request(bare.app)
      .post('/camara/device')
      .set('Authorization', `Bearer ${await tokenFor(bare)}`);
    expect(idOnly.body.device).toEqual({ identifiedBy: 'token', subscriber: { id: 'sub-alice' } });
  });

  it('a token with no subscriber (two-legged): the body names the device, or 422 MISSING_IDENTIFIER / 404 IDENTIFIER_NOT_FOUND', async () => {
    // Tokens without a subscriber come with the client-credentials grant; until then the rules are driven here
    // over HTTP with the guard's own identification, the token's subscriber given as absent.
    const directory = new StaticSubscriberDirectory(SUBSCRIBERS);
    const app = express();
    for (const [path, options] of [
      ['/device', {}],
      ['/phone', { identifier: 'phoneNumber' }],
      ['/none', { identifier: 'none' }],
    ] as const) {
      const identify = deviceIdentification(directory, options, '16kb');
      app.post(
        path,
        (req, res) =>
          void identify(req, res, undefined).then((outcome) =>
            res.status('code' in outcome ? outcome.status : 200).json(outcome),
          ),
      );
    }
    const missing = await request(app).post('/device').send({ maxAge: 1 });
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({
      status: 422,
      code: 'MISSING_IDENTIFIER',
      message: 'The device cannot be identified.',
    });
    expect((await request(app).post('/none')).body.code).toBe('MISSING_IDENTIFIER');
    const found = await request(app)
      .post('/device')
      .send({
        device: {
          networkAccessIdentifier: 'x@example.com',
          ipv4Address: { publicAddress: '100.64.0.1', publicPort: 3000 },
        },
      });
    // The address gives the operator's id only, never the number behind it (issue 32, item 10).
    expect(found.body).toEqual({
      identifiedBy: 'request',
      subscriber: { id: 'sub-bob' },
      identifier: { ipv4Address: { publicAddress: '100.64.0.1', publicPort: 3000 } },
    });
    expect((await request(app).post('/phone').send({ phoneNumber: '+34600000001' })).body.subscriber).toEqual(ALICE);
    const notFound = await request(app).post('/phone').send({ phoneNumber: '+34699999999' });
    expect(notFound.status).toBe(404);
    expect(notFound.body).toEqual({
      status: 404,
      code: 'IDENTIFIER_NOT_FOUND',
      message: 'Device identifier not found.',
    });
    // Behind CGNAT the address alone names no one.
    expect(
      (
        await request(app)
          .post('/device')
          .send({ device: { ipv4Address: { publicAddress: '100.64.0.1', privateAddress: '10.0.0.1' } } })
      ).status,
    ).toBe(404);
    expect(
      (
        await request(app)
          .post('/device')
          .send({ device: { networkAccessIdentifier: 'x@example.com' } })
      ).body.code,
    ).toBe('UNSUPPORTED_IDENTIFIER');
  });

  it('a route whose device is in the body needs no body parser of its own, and a later parser changes nothing', async () => {
    const gw = camaraGateway();
    gw.app.post(
      '/camara/late-parser',
      gw.netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: true }),
      express.json(),
      (req, res) => void res.json({ body: req.body as unknown }),
    );
    const res = await request(gw.app)
      .post('/camara/late-parser')
      .set('Authorization', `Bearer ${await tokenFor(gw)}`)
      .send({ maxAge: 3 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ body: { maxAge: 3 } });
  });
});
