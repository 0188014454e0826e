import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Request } from 'express';
import { MAX_PARAMETERS, parseForm, queryParams } from '../../../lib/gateway/http/form.js';
import { APP1, CIBA, SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { authorizeQuery } from '../../helpers/frontend.js';
import { countWork } from '../../helpers/work.js';

/**
 * Reading request parameters is linear in the request's size and bounded by a parameter count: a request
 * with more is 400 invalid_request (JSON; the error page on the frontend flow before the client is known),
 * while a body over the size limit stays 413. Speed under such requests is measured in bench/ (hostile suite).
 */

const { app } = createTestGateway();
const JSON_ENDPOINTS = [
  '/apigateway/bc-authorize',
  '/apigateway/token',
  '/apigateway/introspect',
  '/apigateway/revoke',
];
/** `a&a&…`: the most parameters a 16 KB request line holds (the default HTTP header limit). */
const repeats = (n: number, part = 'a') => Array.from({ length: n }, () => part).join('&');
const query = (search: string) => ({ originalUrl: `/apigateway/authorize?${search}` }) as Request;

describe('query parameters', () => {
  it(`reads up to ${MAX_PARAMETERS} parameters; a repeated one is refused when read`, () => {
    const params = queryParams(query(`${repeats(MAX_PARAMETERS - 1)}&client_id=app-1`));
    expect(params.get('client_id')).toBe('app-1');
    expect(() => params.get('a')).toThrow(/more than once/);
    expect(() => queryParams(query(repeats(MAX_PARAMETERS + 1)))).toThrow(`more than ${MAX_PARAMETERS} parameters`);
  });

  it('reads a query in work linear in its length (counted, not timed), at any size up to the header limit', () => {
    // Within the count limit: twice the repeats, about twice the work (copying the array per repeat made it 4x).
    const within = (n: number) => countWork(() => queryParams(query(repeats(n, 'client_id=app-1'))).get('state'));
    expect(within(MAX_PARAMETERS) / within(MAX_PARAMETERS / 2)).toBeLessThan(2.3);
    // Past it (8,000 repeats fill a 16 KB request line): the work stays that of the string's length.
    const past = (n: number) => countWork(() => queryParams(query(repeats(n))));
    expect(past(8000) / past(4000)).toBeLessThan(2.3);
  });

  it.each([
    ['GET /authorize', `/apigateway/authorize?${repeats(MAX_PARAMETERS + 1)}&${authorizeQuery()}`],
    ['GET /authorize at the header limit', `/apigateway/authorize?${authorizeQuery()}&${repeats(7900, 'a')}`],
    ['GET /consent', `/apigateway/consent?${repeats(MAX_PARAMETERS + 1, 'interaction=x')}`],
  ])('%s with too many parameters: the 400 error page, no redirect', async (_name, path) => {
    const res = await request(app).get(path).set('X-Forwarded-For', '10.20.0.1');
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('invalid_request');
  });

  it('a client known and the parameters at the limit: still read', async () => {
    const fill = repeats(MAX_PARAMETERS - 5, 'x=1');
    const res = await request(app)
      .get(`/apigateway/authorize?${authorizeQuery()}&${fill}`)
      .set('X-Forwarded-For', '10.20.0.1');
    expect(res.status).toBe(302);
    expect(new URL(res.headers.location as string).searchParams.get('code')).toBeTruthy();
  });
});

describe('form parameters', () => {
  it('reads a form body in work linear in its length (counted, not timed), within the count limit and past it', () => {
    // Long parts without '=' and one at the end: a search for '=' past each part's own end made this quadratic.
    const body = (n: number) => Buffer.from(`${repeats(n, 'a'.repeat(150))}&b=1`);
    const within = (n: number) => countWork(() => parseForm(body(n), 'utf-8'));
    expect(within(MAX_PARAMETERS - 1) / within((MAX_PARAMETERS - 1) / 3)).toBeLessThan(3.5);
    const past = (n: number) => countWork(() => parseForm(Buffer.from(repeats(n)), 'utf-8'));
    expect(past(8000) / past(4000)).toBeLessThan(2.3);
  });

  it.each(JSON_ENDPOINTS)(
    `%s: more than ${MAX_PARAMETERS} parameters is 400 invalid_request JSON, not 413`,
    async (path) => {
      const body = `grant_type=${encodeURIComponent(CIBA)}&${repeats(MAX_PARAMETERS, 'x=1')}`;
      const res = await request(app).post(path).set('Authorization', APP1).type('form').send(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        error: 'invalid_request',
        error_description: `more than ${MAX_PARAMETERS} parameters`,
      });
      expect(res.headers['cache-control']).toBe('no-store');
    },
  );

  it(`up to ${MAX_PARAMETERS} parameters are read`, async () => {
    const body = `login_hint=${encodeURIComponent('tel:+34600000001')}&scope=${encodeURIComponent(SIM_SWAP)}&${repeats(MAX_PARAMETERS - 2, 'x=1')}`;
    const res = await request(app).post('/apigateway/bc-authorize').set('Authorization', APP1).type('form').send(body);
    expect(res.status).toBe(200);
  });

  it('POST /consent with too many parameters: the 400 error page', async () => {
    const res = await request(app)
      .post('/apigateway/consent')
      .type('form')
      .send(repeats(MAX_PARAMETERS + 1, 'decision=allow'));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('invalid_request');
  });

  it('a body over the size limit is still 413, also when it has many parameters', async () => {
    const res = await request(app)
      .post('/apigateway/token')
      .set('Authorization', APP1)
      .type('form')
      .send(repeats(9000, 'a=1'));
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('invalid_request');
  });
});
