import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestGateway, APP1, SIM_SWAP } from '../../helpers/gateway.js';

const { app } = createTestGateway();

describe.each(['/apigateway/bc-authorize', '/apigateway/token'])('wire rules of %s', (path) => {
  it('refuses a JSON body with 400 invalid_request, as JSON, no-store', async () => {
    const res = await request(app)
      .post(path)
      .set('Authorization', APP1)
      .send({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.error).toBe('invalid_request');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
  });

  it('refuses a POST without a body type', async () => {
    const res = await request(app).post(path).set('Authorization', APP1);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('answers another method with 405 and Allow', async () => {
    for (const method of ['get', 'put', 'delete', 'patch'] as const) {
      const res = await request(app)[method](path);
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
    }
  });

  it('refuses a body over the limit with 413 JSON and keeps serving', async () => {
    const res = await request(app)
      .post(path)
      .set('Authorization', APP1)
      .type('form')
      .send(`scope=${'a'.repeat(20 * 1024)}`);
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('invalid_request');
    const after = await request(app).get('/apigateway/.well-known/openid-configuration');
    expect(after.status).toBe(200);
  });

  it('refuses a parameter sent twice', async () => {
    const res = await request(app)
      .post(path)
      .set('Authorization', APP1)
      .type('form')
      .send('login_hint=tel%3A%2B34600000001&scope=a&scope=b&grant_type=x&grant_type=y&auth_req_id=1');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('never answers 5xx or a stack trace for an unsupported charset', async () => {
    const res = await request(app)
      .post(path)
      .set('Authorization', APP1)
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=koi8-r')
      .send('scope=x');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.text).not.toMatch(/at .*\.js/);
  });
});

describe.each(['/apigateway/bc-authorize', '/apigateway/token'])(
  'request bodies of %s that cannot be decoded',
  (path) => {
    // Regression (found by test/properties): body-parser hands on decompression failures as 400s without a
    // `type`, which the error renderer did not recognise: a 500 server_error for a client's bad body.
    it.each(['gzip', 'deflate', 'br'])(
      'Content-Encoding: %s on a body that is not: 400 invalid_request, never 500',
      async (encoding) => {
        const reported: unknown[] = [];
        const gw = createTestGateway({ onError: (e) => reported.push(e) });
        const res = await request(gw.app)
          .post(path)
          .set('Authorization', APP1)
          .set('Content-Encoding', encoding)
          .type('form')
          .send('scope=x');
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'invalid_request', error_description: 'request body could not be read' });
        expect(res.headers['cache-control']).toBe('no-store');
        expect(reported).toEqual([]);
      },
    );
  },
);

describe('wire rules', () => {
  // Regression (found by test/properties): descriptions quoting the request were written with '"', which
  // RFC 6749 §5.2 does not allow in error_description (%x20-21 / %x23-5B / %x5D-7E).
  it('error_description stays in RFC 6749 §5.2’s character set when it quotes the request', async () => {
    const res = await request(app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', APP1)
      .type('form')
      .send({ login_hint: 'tel:+34600000001', scope: 'dpv:FraudPreventionAndDetection#-x' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_scope', error_description: "'-x' is not a valid API scope" });
    const hint = await request(app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', APP1)
      .type('form')
      .send({ login_hint: 'msisdn:x', scope: SIM_SWAP });
    expect(hint.body).toEqual({
      error: 'unknown_user_id',
      error_description: "login_hint type 'msisdn' is not served",
    });
  });

  it('an empty value counts as absent, unknown parameters are ignored', async () => {
    const res = await request(app)
      .post('/apigateway/bc-authorize')
      .set('Authorization', APP1)
      .type('form')
      .send({ login_hint: '', scope: SIM_SWAP, favourite_colour: 'blue' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', error_description: 'login_hint is required' });
  });

  it('publishes discovery metadata under the issuer', async () => {
    const res = await request(app).get('/apigateway/.well-known/openid-configuration');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      issuer: 'http://gateway.test/apigateway',
      authorization_endpoint: 'http://gateway.test/apigateway/authorize',
      token_endpoint: 'http://gateway.test/apigateway/token',
      backchannel_authentication_endpoint: 'http://gateway.test/apigateway/bc-authorize',
      backchannel_token_delivery_modes_supported: ['poll'],
      backchannel_user_code_parameter_supported: false,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(res.body.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'urn:openid:params:grant-type:ciba']),
    );
    expect(res.body.token_endpoint_auth_methods_supported).toContain('client_secret_basic');
    expect(res.body.scopes_supported).toContain(SIM_SWAP);
    expect(res.body.scopes_supported).not.toContain('dpv:Marketing#device-location');
    const rfc8414 = await request(app).get('/apigateway/.well-known/oauth-authorization-server');
    expect(rfc8414.body).toEqual(res.body);
    expect((await request(app).post('/apigateway/.well-known/openid-configuration')).status).toBe(405);
  });
});
