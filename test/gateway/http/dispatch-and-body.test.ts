import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import fc from 'fast-check';
import { formBody, formBodyOf, parseFormBody } from '../../../lib/gateway/http/form.js';
import { APP1, SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';

/**
 * The router's one dispatch layer (lib/gateway/http/dispatch.ts) keeps express.Router's routing, and the form
 * bodies read directly (lib/gateway/http/form.ts) give the parameters body-parser gives: both replaced Express
 * layers on the hot path (issue 18), so these pin the behaviour they must keep.
 */

const { app } = createTestGateway();

describe('routing through the one dispatch layer', () => {
  it('finds an endpoint whatever the case of its path and with one trailing slash, as express.Router did', async () => {
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
      expect(res.headers['allow']).toBe('POST');
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('hands a path that names no endpoint on to the application', async () => {
    const res = await request(app).post('/apigateway/tokens').type('form').send('a=b');
    expect(res.status).toBe(404);
    expect(res.body.error).toBeUndefined();
  });
});

/** An application with body-parser's reading and the package's, side by side, each answering the parameters it read. */
function sideBySide(): express.Express {
  const parameters = express();
  // formBodyOf: the package's own reading (kept beside the request), else body-parser's `req.body`.
  const echo: express.RequestHandler = (req, res) => {
    const body = formBodyOf(req) as Record<string, unknown>;
    res.json(Object.keys(body).sort().map((name) => [name, body[name]]));
  };
  parameters.post('/body-parser', express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 100 }), echo);
  parameters.post('/package', formBody('16kb'), echo);
  parameters.use(((error, _req, res, _next) => res.status(400).json({ failed: String(error) })) as express.ErrorRequestHandler);
  return parameters;
}

describe('form bodies read directly', () => {
  const parameters = sideBySide();
  // Characters that matter to the format (`&`, `=`, `+`, `%` and escapes, malformed ones too) and a few others. No
  // brackets, which qs reads as nesting syntax (`[a]` as `a`) while the package takes names as they are (no endpoint
  // reads either), and no escapes of invalid UTF-8 (below).
  const piece = fc.constantFrom('a', 'b', 'scope', 'client_id', '&', '=', '+', '%', '%2', '%41', '%2B', '%26', '%3D', '%C3%A9', '%ZZ', ' ', 'é', '~', '.', '', '__proto__x', 'toString');
  // The package reads bodies as Express 5's body-parser 2 (qs) does. Express 4's body-parser 1 parses with Node's
  // querystring, which differs on malformed input (it keeps an empty name, decodes the valid escapes around a
  // malformed one): compared under Express 5 only.
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
    const secretInBody = await request(outer).post('/apigateway/token').type('form').send('grant_type=client_credentials&client_id=app-1&client_secret=guess');
    expect(secretInBody.body.error).toBe('invalid_client');
    const res = await request(outer).post('/apigateway/bc-authorize').set('Authorization', APP1).type('form').send(`scope=${encodeURIComponent(SIM_SWAP)}&login_hint=tel:%2B34600000001`);
    expect(res.status).toBe(200);
    expect(seen).toEqual([undefined, undefined]);
  });

  it('read once: a second formBody on the same request passes the form on', async () => {
    const twice = express();
    const form = formBody('16kb');
    twice.post('/twice', form, form, (req, res) => void res.json(formBodyOf(req)));
    const res = await request(twice).post('/twice').type('form').send('a=1&b=2');
    expect(res.body).toEqual({ a: '1', b: '2' });
  });

  it.skipIf(express4)('give the parameters body-parser 2 gives, for any body (repeats as arrays, escapes valid or not, + as space)', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const expected = await request(parameters).post('/body-parser').type('form').send(text);
        const actual = await request(parameters).post('/package').type('form').send(text);
        expect(actual.status).toBe(expected.status);
        expect(actual.body).toEqual(expected.body);
      }),
      { numRuns: 150 },
    );
  });

  it('keep escapes of invalid UTF-8 as sent, as body-parser 2 (Express 5, qs) does; body-parser 1 (Express 4, querystring) made them U+FFFD', () => {
    expect({ ...parseFormBody('a=%C3&b=%E2%82&c=%C3%A9') }).toEqual({ a: '%C3', b: '%E2%82', c: 'é' });
  });

  it('drop a byte-order mark as body-parser does, and refuse more than 100 parts', () => {
    expect({ ...parseFormBody('\uFEFFscope=a') }).toEqual({ scope: 'a' });
    expect(() => parseFormBody(Array.from({ length: 101 }, () => 'a=b').join('&'))).toThrow(/more than 100 parameters/);
  });

  it('still go through body-parser when chunked (no Content-Length): same answer as with one', async () => {
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, method: 'POST', path: '/apigateway/bc-authorize', headers: { authorization: APP1, 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' } },
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
        socket.end(`POST /apigateway/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 50\r\n\r\ngrant_type=`);
      });
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      socket.resume();
    });
    const after = await request(server).get('/apigateway/.well-known/openid-configuration');
    expect(after.status).toBe(200);
  });
});
