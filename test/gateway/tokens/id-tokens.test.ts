import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import type { NetAuthOptions } from '../../../lib/index.js';
import { APP1, APP2, ISSUER, LOCATION, SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { KEY_A } from '../../helpers/keys.js';

const SALT = 'test-salt';
const OPTIONS: Partial<NetAuthOptions> = { idTokens: true, signingKeys: [KEY_A], pairwiseSalt: SALT };
const OPENID_SIM_SWAP = `openid ${SIM_SWAP}`;

const pairwise = (clientId: string, subscriberId: string) =>
  createHash('sha256')
    .update(clientId + subscriberId + SALT)
    .digest('base64url');

async function tokens(app: Express, scope: string, authorization = APP1, hint = 'tel:+34600000001') {
  const authReqId = await startBackchannel(app, hint, scope, authorization);
  const res = await pollToken(app, authReqId, authorization);
  if (res.status !== 200) throw new Error(`token failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { authReqId, body: res.body as { access_token: string; id_token?: string; scope: string } };
}

describe('ID tokens (CIBA)', () => {
  it('with openid granted: a signed ID token with the OIDC claims, the CIBA binding and no nonce', async () => {
    const { app, clock } = createTestGateway(OPTIONS);
    const createdAt = Math.floor(clock.now / 1000);
    const { authReqId, body } = await tokens(app, OPENID_SIM_SWAP);
    expect(body.scope).toBe(OPENID_SIM_SWAP);
    const idToken = body.id_token!;
    expect(decodeProtectedHeader(idToken)).toEqual({ alg: 'RS256', kid: 'key-a', typ: 'JWT' });
    const atHash = createHash('sha256').update(body.access_token).digest().subarray(0, 16).toString('base64url');
    expect(decodeJwt(idToken)).toEqual({
      iss: ISSUER,
      sub: pairwise('app-1', 'sub-alice'),
      aud: 'app-1',
      exp: createdAt + 3600,
      iat: createdAt,
      auth_time: createdAt,
      // Named by the client's tel: hint: nothing authenticated the device (docs/protocol.md, amr).
      amr: ['hint'],
      at_hash: atHash,
      'urn:openid:params:jwt:claim:auth_req_id': authReqId,
    });
    // Signed by a published key.
    const jwks = await request(app).get('/apigateway/jwks');
    const { payload } = await jwtVerify(idToken, createLocalJWKSet(jwks.body), {
      issuer: ISSUER,
      audience: 'app-1',
      currentDate: new Date(clock.now),
    });
    expect(payload.sub).toBe(pairwise('app-1', 'sub-alice'));
  });

  it('sub is pairwise: differs between clients for the same subscriber, never the phone number or the subscriber id', async () => {
    const { app } = createTestGateway(OPTIONS);
    const one = decodeJwt((await tokens(app, OPENID_SIM_SWAP, APP1)).body.id_token!);
    const two = decodeJwt((await tokens(app, OPENID_SIM_SWAP, APP2)).body.id_token!);
    expect(one.sub).not.toBe(two.sub);
    expect(two.sub).toBe(pairwise('app-2', 'sub-alice'));
    for (const sub of [one.sub, two.sub]) {
      expect(sub).not.toContain('34600000001');
      expect(sub).not.toBe('sub-alice');
    }
    // Stable per client.
    expect(decodeJwt((await tokens(app, OPENID_SIM_SWAP, APP1)).body.id_token!).sub).toBe(one.sub);
    // Another subscriber, another sub.
    const bob = decodeJwt((await tokens(app, OPENID_SIM_SWAP, APP1, 'tel:+34600000002')).body.id_token!);
    expect(bob.sub).toBe(pairwise('app-1', 'sub-bob'));
  });

  it('no ID token without openid; with ID tokens turned off, openid is not granted either', async () => {
    const on = createTestGateway(OPTIONS);
    expect((await tokens(on.app, SIM_SWAP)).body).not.toHaveProperty('id_token');
    const off = createTestGateway({ idTokens: false, signingKeys: [KEY_A] });
    const { body } = await tokens(off.app, OPENID_SIM_SWAP);
    expect(body).not.toHaveProperty('id_token');
    expect(body.scope).toBe(SIM_SWAP);
  });

  it('ID tokens are on by default: a granted openid comes with one, signed by the development key', async () => {
    const { app, clock } = createTestGateway();
    const { body } = await tokens(app, OPENID_SIM_SWAP);
    expect(body.scope).toBe(OPENID_SIM_SWAP);
    const jwks = await request(app).get('/apigateway/jwks');
    const expected = { issuer: ISSUER, audience: 'app-1', currentDate: new Date(clock.now) };
    await jwtVerify(body.id_token!, createLocalJWKSet(jwks.body), expected);
  });

  it('auth_time is when the request was created, when approved at once, however late the poll', async () => {
    const { app, clock } = createTestGateway(OPTIONS);
    const createdAt = Math.floor(clock.now / 1000);
    const authReqId = await startBackchannel(app, 'tel:+34600000001', OPENID_SIM_SWAP);
    clock.advance(30);
    const res = await pollToken(app, authReqId);
    const claims = decodeJwt(res.body.id_token as string);
    expect(claims.auth_time).toBe(createdAt);
    expect(claims.iat).toBe(createdAt + 30);
  });

  it("auth_time is when the approval hook's decision came in", async () => {
    const { app, clock, netauth } = createTestGateway({
      ...OPTIONS,
      // The decision is made out-of-band, through netauth.backchannel.approve.
      backchannel: { authorize: () => new Promise(() => {}) },
    });
    const createdAt = Math.floor(clock.now / 1000);
    const authReqId = await startBackchannel(app, 'tel:+34600000001', OPENID_SIM_SWAP);
    clock.advance(20);
    expect((await pollToken(app, authReqId)).body.error).toBe('authorization_pending');
    clock.advance(25);
    expect(await netauth.backchannel.approve(authReqId)).toBe(true);
    clock.advance(10);
    const claims = decodeJwt((await pollToken(app, authReqId)).body.id_token as string);
    expect(claims.auth_time).toBe(createdAt + 45);
  });

  it('with consent collected out-of-band, the ID token comes with the token once consent is recorded', async () => {
    const { app, netauth } = createTestGateway(OPTIONS);
    const authReqId = await startBackchannel(app, 'tel:+34600000002', `openid ${LOCATION}`);
    expect((await pollToken(app, authReqId)).body.error).toBe('authorization_pending');
    await netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000002', scope: LOCATION });
    const claims = decodeJwt((await pollToken(app, authReqId)).body.id_token as string);
    expect(claims.sub).toBe(pairwise('app-1', 'sub-bob'));
  });

  it('JWT access tokens and ID tokens together: different typ, aud and sub', async () => {
    const { app } = createTestGateway({ ...OPTIONS, accessTokenFormat: 'jwt' });
    const { body } = await tokens(app, OPENID_SIM_SWAP);
    const at = decodeJwt(body.access_token);
    const id = decodeJwt(body.id_token!);
    expect(decodeProtectedHeader(body.access_token).typ).toBe('at+jwt');
    expect(at.aud).toBe(ISSUER);
    expect(id.aud).toBe('app-1');
    expect(at.sub).toBe(pairwise('app-1', 'sub-alice'));
    expect(id.sub).toBe(pairwise('app-1', 'sub-alice'));
    expect(at.scope).toBe(OPENID_SIM_SWAP);
  });
});
