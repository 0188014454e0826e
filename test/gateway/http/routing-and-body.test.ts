import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import fc from 'fast-check';
import { formBody } from '../../../lib/gateway/http/read-params.js';
import { beginRequest, step } from '../../../lib/gateway/http/request-context.js';
import { APP1, SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';

/**
 * The router's endpoints are express.Router routes with Express's routing, and their form bodies are read by the
 * package's own reader into the request's context (lib/gateway/http/read-params.ts, read-body.ts), with the
 * values body-parser would give: these pin what both must keep.
 */

const { app } = createTestGateway();

describe('routing', () => {
  it('finds an endpoint whatever the case of its path and with one trailing slash (Express routing)', async () => {
    for (const path of ['/apigateway/TOKEN', '/apigateway/token/', '/apigateway/Bc-Authorize/']) {
      const res = await request(app).post(path).type('form').send('grant_type=x');
      // The endpoint answered (client authentication comes first), not the application's 404.
      expect(res.status, path).toBe(401);
      expect(res.body.error).toBe('invalid_client');
    }
  });

  it('answers HEAD where GET is served, and 405 with Allow for any other method', async () => {
    const head = await request(app).head('/apigateway/.well-known/openid-configuration');
    expect(head.status).toBe(200);
    for (const method of ['options', 'put'] as const) {
      const res = await request(app)[method]('/apigateway/token');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('hands a path that names no endpoint on to the application', async () => {
    const res = await request(app).post('/apigateway/tokens').type('form').send('a=b');
    expect(res.status).toBe(404);
    expect(res.body.error).toBeUndefined();
  });
});

/**
 * The parameters the package's reader hands an endpoint, for the names asked in `x-names` (JSON, percent-encoded):
 * a value, null (absent) or 'repeated'.
 */
const packageEcho = step((request, req, res) => {
  const names = JSON.parse(decodeURIComponent(String(req.headers['x-names'] ?? '[]'))) as string[];
  res.json(
    names.map((name) => {
      try {
        return [name, request.params.get(name) ?? null];
      } catch {
        return [name, 'repeated'];
      }
    }),
  );
});

/** An application with body-parser's reading and the package's, side by side. */
function sideBySide(): express.Express {
  const parameters = express();
  const bodyParserEcho: express.RequestHandler = (req, res) => {
    const body = req.body as Record<string, unknown>;
    res.json(
      Object.keys(body)
        .sort()
        .map((name) => [name, body[name]]),
    );
  };
  const bodyParser = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 100 });
  parameters.post('/body-parser', bodyParser, bodyParserEcho);
  parameters.post('/package', beginRequest, formBody('16kb'), packageEcho);
  parameters.use(((error, _req, res, _next) =>
    res.status(400).json({ failed: String(error) })) as express.ErrorRequestHandler);
  return parameters;
}

/** What docs/protocol.md's wire rules make of body-parser's values: a repeat refused, an empty value absent. */
function wireReading(entries: Array<[string, unknown]>): Array<[string, unknown]> {
  return entries.map(([name, value]) => [name, Array.isArray(value) ? 'repeated' : value === '' ? null : value]);
}

describe('form bodies', () => {
  const parameters = sideBySide();
  // Characters that matter to the format (`&`, `=`, `+`, `%` and escapes, malformed ones too) and a few others.
  const piece = fc.constantFrom(
    ...['a', 'b', 'scope', 'client_id', '&', '=', '+', '%', '%2', '%41', '%2B', '%26', '%3D', '%C3%A9', '%ZZ', '%C3'],
    ...[' ', 'é', '~', '.', '', '__proto__x', 'toString'],
  );
  const express4 = typeof (express as unknown as { query?: unknown }).query === 'function';
  const body = fc.array(piece, { maxLength: 40 }).map((pieces) => pieces.join(''));

  it('keep the form to the endpoint: the application sees no req.body (a client secret sent in it stays off the request)', async () => {
    const { netauth } = createTestGateway();
    const outer = express();
    const seen: unknown[] = [];
    outer.use((req, res, next) => {
      res.on('finish', () => seen.push(req.body));
      next();
    });
    outer.use('/apigateway', netauth.router);
    const secretInBody = await request(outer)
      .post('/apigateway/token')
      .type('form')
      .send('grant_type=client_credentials&client_id=app-1&client_secret=guess');
    expect(secretInBody.body.error).toBe('invalid_client');
    const res = await request(outer)
      .post('/apigateway/bc-authorize')
      .set('Authorization', APP1)
      .type('form')
      .send(`scope=${encodeURIComponent(SIM_SWAP)}&login_hint=tel:%2B34600000001`);
    expect(res.status).toBe(200);
    expect(seen).toEqual([undefined, undefined]);
  });

  it('read once: a second formBody on the same request passes the form on', async () => {
    const twice = express();
    const form = formBody('16kb');
    twice.post('/twice', beginRequest, form, form, packageEcho);
    const res = await request(twice).post('/twice').set('x-names', '["a","b"]').type('form').send('a=1&b=2');
    expect(res.body).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
  });

  // The package reads forms itself, the same under Express 4 and 5: its parity is with body-parser 2 (Express 5's,
  // qs), which drops an empty name where Express 4's body-parser 1 keeps it.
  it.skipIf(express4)(
    'hand the endpoint the parameters body-parser gives, by the wire rules, for any body',
    async () => {
      await fc.assert(
        fc.asyncProperty(body, async (text) => {
          const expected = await request(parameters).post('/body-parser').type('form').send(text);
          const names =
            expected.status === 200 ? (expected.body as Array<[string, unknown]>).map(([name]) => name) : [];
          const asked = encodeURIComponent(JSON.stringify(names));
          const actual = await request(parameters).post('/package').set('x-names', asked).type('form').send(text);
          expect(actual.status).toBe(expected.status);
          if (expected.status !== 200) return;
          expect(actual.body).toEqual(wireReading(expected.body as Array<[string, unknown]>));
        }),
        { numRuns: 60 },
      );
    },
  );

  it.skipIf(express4)('keep escapes of invalid UTF-8 as sent (body-parser 2, qs), drop a byte-order mark', async () => {
    const names = encodeURIComponent(JSON.stringify(['a', 'b', 'c', 'scope']));
    const post = (text: string) => request(parameters).post('/package').set('x-names', names).type('form').send(text);
    const invalid = await post('a=%C3&b=%E2%82&c=%C3%A9');
    expect(invalid.body).toEqual([
      ['a', '%C3'],
      ['b', '%E2%82'],
      ['c', 'é'],
      ['scope', null],
    ]);
    const bom = await post('\uFEFFscope=a');
    expect(bom.body).toEqual([
      ['a', null],
      ['b', null],
      ['c', null],
      ['scope', 'a'],
    ]);
  });

  it.skipIf(express4)('read an ISO-8859-1 form as body-parser does, and refuse other charsets', async () => {
    const names = encodeURIComponent(JSON.stringify(['a', 'b', 'c']));
    const latin1 = 'a=%E9t%E9&b=caf%E9+cr%E8me&c=%ZZ';
    const type = 'application/x-www-form-urlencoded; charset="ISO-8859-1"';
    const expected = await request(parameters).post('/body-parser').set('content-type', type).send(latin1);
    const actual = await request(parameters)
      .post('/package')
      .set('x-names', names)
      .set('content-type', type)
      .send(latin1);
    expect(expected.body).toEqual([
      ['a', 'été'],
      ['b', 'café crème'],
      ['c', '%ZZ'],
    ]);
    expect(actual.body).toEqual(expected.body);
    const koi8 = await request(parameters)
      .post('/package')
      .set('x-names', names)
      .set('content-type', 'application/x-www-form-urlencoded; charset=koi8-r')
      .send('a=1');
    expect(koi8.status).toBe(400);
  });

  it('take a form the application read before the router (its own body-parser)', async () => {
    const { netauth } = createTestGateway();
    const outer = express();
    outer.use(express.urlencoded({ extended: false }));
    outer.use('/apigateway', netauth.router);
    const res = await request(outer)
      .post('/apigateway/bc-authorize')
      .set('Authorization', APP1)
      .type('form')
      .send(`scope=${encodeURIComponent(SIM_SWAP)}&login_hint=tel:%2B34600000001`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveProperty('auth_req_id');
  });

  it('are read when chunked (no Content-Length) as with one', async () => {
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/apigateway/bc-authorize',
            headers: {
              authorization: APP1,
              'content-type': 'application/x-www-form-urlencoded',
              'transfer-encoding': 'chunked',
            },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on('error', reject);
        req.write('login_hint=tel%3A%2B34600000001&');
        req.end(`scope=${encodeURIComponent(SIM_SWAP)}`);
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toHaveProperty('auth_req_id');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('a body that ends short', () => {
  let server: http.Server;
  let port = 0;
  beforeAll(async () => {
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('leaves the server serving: the next request is answered', async () => {
    const net = await import('node:net');
    await new Promise<void>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end(
          `POST /apigateway/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 50\r\n\r\ngrant_type=`,
        );
      });
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      socket.resume();
    });
    const after = await request(server).get('/apigateway/.well-known/openid-configuration');
    expect(after.status).toBe(200);
  });
});
