import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { APP1, createTestGateway } from '../helpers/gateway.js';
import {
  ALICE_IP,
  CALLBACK,
  LOCATION,
  SIM_SWAP,
  authorizeQuery,
  callback,
  codeFor,
  redeem,
} from '../helpers/frontend.js';

/**
 * RFC 9700 (OAuth 2.0 Security BCP) recommendations that no other test file covers on its own;
 * docs/security.md maps every applicable recommendation to its test.
 */

describe('RFC 9700 §2.2.2 / §4.14: refresh tokens only where asked for and registered', () => {
  it('a client not registered for refresh_token gets none, even asking for offline_access, and grant_type=refresh_token is unauthorized_client', async () => {
    const gw = createTestGateway();
    const code = await redeem(gw.app, {
      code: await codeFor(gw, { scope: `${SIM_SWAP} offline_access` }),
      redirect_uri: CALLBACK,
    });
    expect(code.status).toBe(200);
    expect(code.body).not.toHaveProperty('refresh_token');
    expect(code.body.scope).toBe(SIM_SWAP);
    const refresh = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', APP1)
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: 'x' });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('unauthorized_client');
    // No client of this gateway is registered for refresh tokens: discovery does not offer them.
    const metadata = await request(gw.app).get('/apigateway/.well-known/openid-configuration');
    expect(metadata.body.grant_types_supported).not.toContain('refresh_token');
    expect(metadata.body.scopes_supported).not.toContain('offline_access');
  });
});

describe('RFC 9700 §4.13: behind a TLS-terminating proxy', () => {
  const HTTPS_ISSUER = 'https://gateway.test/apigateway';

  it('an https issuer sets the consent cookie Secure when trust proxy makes the request secure', async () => {
    const gw = createTestGateway({ issuer: HTTPS_ISSUER });
    const res = await request(gw.app)
      .get(`/apigateway/authorize?${authorizeQuery({ scope: LOCATION })}`)
      .set('X-Forwarded-For', ALICE_IP)
      .set('X-Forwarded-Proto', 'https');
    expect(res.status).toBe(302);
    expect(res.headers.location).toMatch(/^https:\/\/gateway\.test\/apigateway\/consent\?interaction=/);
    const cookie = (res.headers['set-cookie'] as unknown as string[]).join(';');
    expect(cookie).toMatch(/netauth\.sid=.*; Secure/);
  });

  it('an https issuer whose request is not secure (no X-Forwarded-Proto from a trusted proxy): server_error, onError says why, no cookie', async () => {
    const reported: unknown[] = [];
    const behind = createTestGateway({ issuer: HTTPS_ISSUER, onError: (e) => reported.push(e) });
    const plain = await request(behind.app)
      .get(`/apigateway/authorize?${authorizeQuery({ scope: LOCATION })}`)
      .set('X-Forwarded-For', ALICE_IP);
    expect(callback(plain)).toMatchObject({
      error: 'server_error',
      error_description: 'internal error',
      iss: HTTPS_ISSUER,
    });
    expect(plain.headers['set-cookie']).toBeUndefined();
    expect(String(reported[0])).toMatch(/trust proxy/);
  });
});
