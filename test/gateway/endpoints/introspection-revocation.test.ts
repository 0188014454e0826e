import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import type { NetAuthOptions } from '../../../lib/index.js';
import { APP1, APP2, ISSUER, LOCATION, SIM_SWAP, basic, createTestGateway } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { KEY_A } from '../../helpers/keys.js';

const SALT = 'test-salt';

async function tokenFor(app: Express, scope = SIM_SWAP, authorization = APP1): Promise<string> {
  const res = await pollToken(
    app,
    await startBackchannel(app, 'tel:+34600000001', scope, authorization),
    authorization,
  );
  if (res.status !== 200) throw new Error(`token failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

function introspect(app: Express, body: Record<string, string>, authorization: string | null = APP1) {
  const req = request(app).post('/apigateway/introspect');
  if (authorization !== null) req.set('Authorization', authorization);
  return req.type('form').send(body);
}

function revoke(app: Express, body: Record<string, string>, authorization: string | null = APP1) {
  const req = request(app).post('/apigateway/revoke');
  if (authorization !== null) req.set('Authorization', authorization);
  return req.type('form').send(body);
}

const call = (app: Express, token: string) =>
  request(app).post('/sim-swap/check').set('Authorization', `Bearer ${token}`);

const pairwise = (clientId: string, subscriberId: string) =>
  createHash('sha256')
    .update(clientId + subscriberId + SALT)
    .digest('base64url');

const FORMATS: Array<[string, Partial<NetAuthOptions>]> = [
  ['opaque', { pairwiseSalt: SALT }],
  ['jwt', { pairwiseSalt: SALT, accessTokenFormat: 'jwt', signingKeys: [KEY_A] }],
];

describe.each(FORMATS)('token introspection (RFC 7662), %s access tokens', (_format, options) => {
  it('an active token: the RFC 7662 members, sub pairwise, the purpose; no-store', async () => {
    const { app, clock } = createTestGateway(options);
    const token = await tokenFor(app);
    const res = await introspect(app, { token });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const iat = Math.floor(clock.now / 1000);
    expect(res.body).toEqual({
      active: true,
      scope: SIM_SWAP,
      client_id: 'app-1',
      token_type: 'Bearer',
      exp: iat + 3600,
      iat,
      sub: pairwise('app-1', 'sub-alice'),
      iss: ISSUER,
      purpose: 'FraudPreventionAndDetection',
      // Named by the client's tel: hint (CIBA).
      identified_by: 'tel',
      amr: ['hint'],
    });
    expect(JSON.stringify(res.body)).not.toContain('34600000001');
    expect(res.body.sub).not.toBe('sub-alice');
  });

  it('a token_type_hint changes nothing', async () => {
    const { app } = createTestGateway(options);
    const token = await tokenFor(app);
    expect((await introspect(app, { token, token_type_hint: 'access_token' })).body.active).toBe(true);
    expect((await introspect(app, { token, token_type_hint: 'refresh_token' })).body.active).toBe(true);
  });

  it('unknown, expired, revoked, or another client\'s token: exactly {"active":false}', async () => {
    const { app, clock, netauth } = createTestGateway(options);
    expect((await introspect(app, { token: 'no-such-token' })).body).toEqual({ active: false });

    const mine = await tokenFor(app);
    const theirs = await tokenFor(app, SIM_SWAP, APP2);
    const other = await introspect(app, { token: theirs });
    expect(other.status).toBe(200);
    expect(other.body).toEqual({ active: false });
    // app-2 sees its own token active, with its own pairwise sub for the same subscriber.
    const own = await introspect(app, { token: theirs }, APP2);
    expect(own.body).toMatchObject({ active: true, client_id: 'app-2', sub: pairwise('app-2', 'sub-alice') });
    expect(own.body.sub).not.toBe((await introspect(app, { token: mine })).body.sub);

    expect((await revoke(app, { token: mine })).status).toBe(200);
    expect((await introspect(app, { token: mine })).body).toEqual({ active: false });

    await netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    const underConsent = await tokenFor(app, LOCATION);
    expect((await introspect(app, { token: underConsent })).body.active).toBe(true);
    await netauth.consent.revoke({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    expect((await introspect(app, { token: underConsent })).body).toEqual({ active: false });

    const later = await tokenFor(app);
    clock.advance(3600);
    expect((await introspect(app, { token: later })).body).toEqual({ active: false });
  });

  it('missing token: 400 invalid_request; token sent twice: invalid_request', async () => {
    const { app } = createTestGateway(options);
    const res = await introspect(app, {});
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', error_description: 'token is required' });
    const twice = await request(app)
      .post('/apigateway/introspect')
      .set('Authorization', APP1)
      .type('form')
      .send('token=a&token=b');
    expect(twice.status).toBe(400);
    expect(twice.body.error).toBe('invalid_request');
  });

  it('wrong or missing client credentials: 401 invalid_client with a Basic challenge', async () => {
    const { app } = createTestGateway(options);
    const token = await tokenFor(app);
    for (const authorization of [basic('app-1', 'wrong'), basic('nobody', 'x'), null]) {
      const res = await introspect(app, { token }, authorization);
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_client');
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm="/);
    }
  });

  it('wire rules: form bodies only, 405 with Allow for other methods', async () => {
    const { app } = createTestGateway(options);
    const json = await request(app).post('/apigateway/introspect').set('Authorization', APP1).send({ token: 'x' });
    expect(json.status).toBe(400);
    expect(json.body.error).toBe('invalid_request');
    const get = await request(app).get('/apigateway/introspect');
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
  });
});

describe.each(FORMATS)('token revocation (RFC 7009), %s access tokens', (_format, options) => {
  it('revokes the token: 200, and the guard refuses it at once', async () => {
    const { app } = createTestGateway(options);
    const token = await tokenFor(app);
    const other = await tokenFor(app);
    expect((await call(app, token)).status).toBe(200);
    const res = await revoke(app, { token, token_type_hint: 'access_token' });
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect(res.headers['cache-control']).toBe('no-store');
    const after = await call(app, token);
    expect(after.status).toBe(401);
    expect(after.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await call(app, other)).status).toBe(200);
    // Revoking again, like any unknown token: 200.
    expect((await revoke(app, { token })).status).toBe(200);
  });

  it('a wrong token_type_hint still finds the token (§2.1)', async () => {
    const { app } = createTestGateway(options);
    const token = await tokenFor(app);
    expect((await revoke(app, { token, token_type_hint: 'refresh_token' })).status).toBe(200);
    expect((await call(app, token)).status).toBe(401);
  });

  it('an unknown or expired token: 200 (§2.2)', async () => {
    const { app, clock } = createTestGateway(options);
    expect((await revoke(app, { token: 'no-such-token' })).status).toBe(200);
    const token = await tokenFor(app);
    clock.advance(3600);
    expect((await revoke(app, { token })).status).toBe(200);
  });

  it("another client's token: 400 invalid_request, and the token stays valid", async () => {
    const { app } = createTestGateway(options);
    const token = await tokenFor(app);
    const res = await revoke(app, { token }, APP2);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'invalid_request',
      error_description: 'the token was not issued to this client',
    });
    expect((await call(app, token)).status).toBe(200);
    expect((await introspect(app, { token })).body.active).toBe(true);
  });

  it('missing token: 400 invalid_request; wrong credentials: 401 and nothing revoked', async () => {
    const { app } = createTestGateway(options);
    const token = await tokenFor(app);
    const missing = await revoke(app, { token_type_hint: 'access_token' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    const wrong = await revoke(app, { token }, basic('app-1', 'wrong'));
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    expect(wrong.headers['www-authenticate']).toMatch(/^Basic realm="/);
    expect((await call(app, token)).status).toBe(200);
  });

  it('405 with Allow for other methods', async () => {
    const { app } = createTestGateway(options);
    const res = await request(app).put('/apigateway/revoke');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
  });
});
