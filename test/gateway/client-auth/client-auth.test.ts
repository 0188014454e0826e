import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestGateway, basic, APP1, CIBA, SECRET, SIM_SWAP } from '../../helpers/gateway.js';
import { recordEvents } from '../../helpers/events.js';
import { hashClientSecret } from '../../../lib/index.js';

const body = { login_hint: 'tel:+34600000001', scope: SIM_SWAP };

function expectInvalidClient(res: request.Response): void {
  expect(res.status).toBe(401);
  expect(res.body.error).toBe('invalid_client');
  expect(res.headers['www-authenticate']).toBe('Basic realm="http://gateway.test/apigateway"');
  expect(res.headers['cache-control']).toBe('no-store');
}

describe('client authentication', () => {
  const { app } = createTestGateway();
  const post = (authorization?: string, extra: Record<string, string> = {}) => {
    const r = request(app).post('/apigateway/bc-authorize').type('form');
    if (authorization !== undefined) r.set('Authorization', authorization);
    return r.send({ ...body, ...extra });
  };

  it('accepts credentials encoded as openid-client encodes them (-, _, ., ~, :, +, space, % percent-encoded)', async () => {
    const header = basic('app-1', SECRET);
    expect(Buffer.from(header.slice(6), 'base64').toString()).toContain('%2D');
    const res = await post(header);
    expect(res.status).toBe(200);
  });

  it('accepts unencoded credentials too, splitting on the first colon', async () => {
    const raw = `Basic ${Buffer.from('app-2:other-secret').toString('base64')}`;
    expect((await post(raw)).status).toBe(200);
  });

  it('splits on the FIRST colon, form-decodes both halves: a raw colon in the secret belongs to it', async () => {
    const { app: colons, netauth } = createTestGateway({
      clients: [
        { clientId: 'colon-app', clientSecret: 'se:cret:value', grantTypes: [CIBA], scopes: [SIM_SWAP] },
        { clientId: 'a:b', clientSecret: 'c%d e-secret', grantTypes: [CIBA], scopes: [SIM_SWAP] },
      ],
    });
    const events = recordEvents(netauth);
    const send = (credentials: string, scheme = 'Basic') =>
      request(colons)
        .post('/apigateway/bc-authorize')
        .set('Authorization', `${scheme} ${Buffer.from(credentials).toString('base64')}`)
        .type('form')
        .send(body);
    expect((await send('colon-app:se:cret:value')).status).toBe(200);
    expect((await send('a%3Ab:c%25d+e-secret', 'basic')).status).toBe(200);
    expectInvalidClient(await send('colon-app:se'));
    // Unreadable: no colon, a malformed %-escape in either half, another scheme; none reaches a comparison.
    const unreadable = [['colon-app'], ['colon-app:%zz'], ['colon%E0%A4:x'], ['colon-app:se:cret:value', 'Bearer']];
    for (const [credentials, scheme] of unreadable) expectInvalidClient(await send(credentials!, scheme));
    const reasons = events.of('client.authentication_failed').map((e) => e.reason);
    expect(reasons).toEqual(['invalid_credentials', 'malformed', 'malformed', 'malformed', 'malformed']);
  });

  it('missing credentials: 401 invalid_client with WWW-Authenticate', async () => {
    expectInvalidClient(await post());
  });

  it('a wrong secret, an unknown client, a malformed header: 401 invalid_client', async () => {
    expectInvalidClient(await post(basic('app-1', 'wrong')));
    expectInvalidClient(await post(basic('nobody', SECRET)));
    expectInvalidClient(await post('Basic !!!not-base64!!!'));
    expectInvalidClient(await post(`Basic ${Buffer.from('app-1').toString('base64')}`));
    expectInvalidClient(await post('Bearer something'));
    expectInvalidClient(await post(`Basic ${Buffer.from('app-1:%E0%A4%A').toString('base64')}`));
  });

  it('a body client_id naming another client: 401 invalid_client; the same client_id is fine', async () => {
    expectInvalidClient(await post(APP1, { client_id: 'app-2' }));
    expect((await post(APP1, { client_id: 'app-1' })).status).toBe(200);
  });

  it('two authentication methods at once: 400 invalid_request', async () => {
    const res = await post(APP1, { client_id: 'app-1', client_secret: SECRET });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('client_secret_post only for clients registered with it', async () => {
    // With the right secret, the answer names the registered method (openid-client's default is Basic)...
    const proved = await post(undefined, { client_id: 'app-1', client_secret: SECRET });
    expectInvalidClient(proved);
    expect(proved.body.error_description).toBe(
      'this client is registered for client_secret_basic, not client_secret_post',
    );
    // ...and only then: without the secret nothing about the registration is told.
    const guessed = await post(undefined, { client_id: 'app-1', client_secret: 'wrong' });
    expectInvalidClient(guessed);
    expect(guessed.body.error_description).toBe('client authentication failed');
    const { app: postApp } = createTestGateway({
      clients: [
        {
          clientId: 'poster',
          clientSecret: 's3cret',
          tokenEndpointAuthMethod: 'client_secret_post',
          grantTypes: ['urn:openid:params:grant-type:ciba'],
          scopes: [SIM_SWAP],
        },
      ],
    });
    const ok = await request(postApp)
      .post('/apigateway/bc-authorize')
      .type('form')
      .send({ ...body, client_id: 'poster', client_secret: 's3cret' });
    expect(ok.status).toBe(200);
    const basicForPoster = await request(postApp)
      .post('/apigateway/bc-authorize')
      .set('Authorization', basic('poster', 's3cret'))
      .type('form')
      .send(body);
    expectInvalidClient(basicForPoster);
    expect(basicForPoster.body.error_description).toBe(
      'this client is registered for client_secret_post, not client_secret_basic',
    );
  });

  it('secrets registered as hashes (sha256 and scrypt) authenticate', async () => {
    const { app: hashed } = createTestGateway({
      clients: [
        {
          clientId: 'sha',
          clientSecretHash: await hashClientSecret('pw-sha'),
          grantTypes: ['urn:openid:params:grant-type:ciba'],
          scopes: [SIM_SWAP],
        },
        {
          clientId: 'scr',
          clientSecretHash: await hashClientSecret('pw-scrypt', 'scrypt'),
          grantTypes: ['urn:openid:params:grant-type:ciba'],
          scopes: [SIM_SWAP],
        },
      ],
    });
    const send = (auth: string) =>
      request(hashed).post('/apigateway/bc-authorize').set('Authorization', auth).type('form').send(body);
    expect((await send(basic('sha', 'pw-sha'))).status).toBe(200);
    expect((await send(basic('scr', 'pw-scrypt'))).status).toBe(200);
    expectInvalidClient(await send(basic('sha', 'pw-sha2')));
    expectInvalidClient(await send(basic('scr', 'pw-scrypt ')));
  });

  it('the token endpoint authenticates the same way', async () => {
    const res = await request(app)
      .post('/apigateway/token')
      .type('form')
      .send({ grant_type: 'urn:openid:params:grant-type:ciba', auth_req_id: 'x' });
    expectInvalidClient(res);
    const wrong = await request(app)
      .post('/apigateway/token')
      .set('Authorization', basic('app-1', 'nope'))
      .type('form')
      .send({ grant_type: 'urn:openid:params:grant-type:ciba', auth_req_id: 'x' });
    expectInvalidClient(wrong);
  });
});

describe('client registration', () => {
  const client = (redirectUris: string[]) => ({
    clientId: 'c',
    clientSecret: 's',
    redirectUris,
    grantTypes: ['authorization_code' as const],
    scopes: [SIM_SWAP],
  });

  it('refuses http: redirect URIs outside loopback, fragments and relative URIs (RFC 9700 §2.1)', () => {
    expect(() => createTestGateway({ clients: [client(['http://app.example/cb'])] })).toThrow(/http: outside loopback/);
    expect(() => createTestGateway({ clients: [client(['https://app.example/cb#x'])] })).toThrow(/fragment/);
    expect(() => createTestGateway({ clients: [client(['/cb'])] })).toThrow(/absolute/);
  });

  it('accepts https, loopback http and private-use schemes for native apps', () => {
    expect(() =>
      createTestGateway({
        clients: [
          client([
            'https://app.example/cb',
            'http://localhost:3001/cb',
            'http://127.0.0.1:8080/cb',
            'http://[::1]/cb',
            'com.example.app:/oauth2redirect',
          ]),
        ],
      }),
    ).not.toThrow();
  });
});
