import { createHash, createPrivateKey, type JsonWebKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import express, { type Express } from 'express';
import { SignJWT, decodeJwt, decodeProtectedHeader, createLocalJWKSet, jwtVerify, type JWK } from 'jose';
import { MemoryStore, createNetAuth, type NetAuthOptions } from '../../../lib/index.js';
import {
  APP1,
  APP2,
  CLIENTS,
  ISSUER,
  LOCATION,
  POLICY,
  SIM_SWAP,
  SUBSCRIBERS,
  createTestGateway,
} from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { FOREIGN_KEY, KEY_A, KEY_B, NoTokenReadStore, ecKey, rsaKey } from '../../helpers/keys.js';

const pairwise = (clientId: string, subscriberId: string) =>
  createHash('sha256').update(`${clientId}${subscriberId}test-salt`).digest('base64url');
const KEY_A_PRIVATE = createPrivateKey({ key: KEY_A as JsonWebKey, format: 'jwk' });
const JWT_OPTIONS: Partial<NetAuthOptions> = {
  accessTokenFormat: 'jwt',
  signingKeys: [KEY_A],
  pairwiseSalt: 'test-salt',
};

async function tokenFor(
  app: Express,
  scope = SIM_SWAP,
  authorization = APP1,
  hint = 'tel:+34600000001',
): Promise<string> {
  const res = await pollToken(app, await startBackchannel(app, hint, scope, authorization), authorization);
  if (res.status !== 200) throw new Error(`token failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

const call = (app: Express, token: string) =>
  request(app).post('/sim-swap/check').set('Authorization', `Bearer ${token}`);

function revoke(app: Express, token: string, authorization = APP1) {
  return request(app).post('/apigateway/revoke').set('Authorization', authorization).type('form').send({ token });
}

/** Re-encodes a JWT with one payload claim changed, keeping the original signature. */
function tamper(jwt: string, change: (payload: Record<string, unknown>) => void): string {
  const [header, payload, signature] = jwt.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  change(claims);
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

describe('JWT access tokens (RFC 9068)', () => {
  it('carry the pairwise sub: two clients see different ones, neither the internal id; the guard still gets it', async () => {
    const { app } = createTestGateway(JWT_OPTIONS);
    const one = await tokenFor(app, SIM_SWAP, APP1);
    const two = await tokenFor(app, SIM_SWAP, APP2);
    const [subOne, subTwo] = [decodeJwt(one).sub, decodeJwt(two).sub];
    expect(subOne).toBe(pairwise('app-1', 'sub-alice'));
    expect(subTwo).toBe(pairwise('app-2', 'sub-alice'));
    expect(subOne).not.toBe(subTwo);
    for (const token of [one, two]) {
      expect(JSON.stringify(decodeJwt(token))).not.toContain('sub-alice');
      // Issue 32, finding 4: the guard maps back to the operator's id, with no store read.
      expect((await call(app, token)).body.subscriber).toBe('sub-alice');
    }
  });

  it('are at+jwt with the RFC 9068 claims, the purpose and grant ids; never the phone number', async () => {
    const { app, clock } = createTestGateway(JWT_OPTIONS);
    const token = await tokenFor(app);
    const header = decodeProtectedHeader(token);
    expect(header).toEqual({ alg: 'RS256', kid: 'key-a', typ: 'at+jwt' });
    const claims = decodeJwt(token);
    const now = Math.floor(clock.now / 1000);
    expect(claims).toEqual({
      iss: ISSUER,
      sub: pairwise('app-1', 'sub-alice'),
      aud: ISSUER,
      exp: now + 3600,
      iat: now,
      jti: expect.stringMatching(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{22}$/),
      client_id: 'app-1',
      scope: SIM_SWAP,
      purpose: 'FraudPreventionAndDetection',
      grant_ids: [expect.stringMatching(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{22}$/)],
      subscriber_sealed: expect.stringMatching(/^[A-Za-z0-9_-]+$/),
      // How the subscriber was identified (a CIBA tel: hint), and its amr (RFC 9068 §2.2.1).
      identified_by: 'tel',
      amr: ['hint'],
      // When the authorization began (the bc-authorize), to the millisecond: what the levers' markers are compared with.
      authorized_at: now,
    });
    expect(JSON.stringify(claims)).not.toContain('sub-alice');
    // The jti carries its grant's placement tag, so a sharded store keeps the token's record with the grant.
    expect((claims.jti as string).split('.')[0]).toBe((claims.grant_ids as string[])[0]!.split('.')[0]);
    expect(token).not.toContain('34600000001');
    expect(JSON.stringify(claims)).not.toContain('34600000001');
  });

  it('verify with the published JWKS (public keys only)', async () => {
    const { app } = createTestGateway(JWT_OPTIONS);
    const token = await tokenFor(app);
    const jwks = await request(app).get('/apigateway/jwks');
    expect(jwks.status).toBe(200);
    expect(jwks.headers['content-type']).toMatch(/^application\/jwk-set\+json/);
    for (const key of jwks.body.keys as JWK[]) expect(key).not.toHaveProperty('d');
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.body), {
      issuer: ISSUER,
      audience: ISSUER,
      typ: 'at+jwt',
      currentDate: new Date(1_800_000_000_000),
    });
    expect(payload.client_id).toBe('app-1');
  });

  it('use accessTokenAudience as aud', async () => {
    const { app } = createTestGateway({ ...JWT_OPTIONS, accessTokenAudience: 'https://api.operator.example' });
    const token = await tokenFor(app);
    expect(decodeJwt(token).aud).toBe('https://api.operator.example');
    expect((await call(app, token)).status).toBe(200);
  });

  it('the guard accepts one without reading the token record', async () => {
    const store = new NoTokenReadStore(new MemoryStore());
    const { app } = createTestGateway({ ...JWT_OPTIONS, store });
    const token = await tokenFor(app);
    store.reads.length = 0;
    const res = await call(app, token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      swapped: false,
      subscriber: 'sub-alice',
      clientId: 'app-1',
      purpose: 'FraudPreventionAndDetection',
    });
    // No store read at all in the default (local) revocation mode.
    expect(store.reads).toEqual([]);
    // The wrapper does see and refuse a token-record read: an opaque-format gateway on it fails the call.
    const opaqueStore = new NoTokenReadStore(new MemoryStore());
    const opaque = createTestGateway({ store: opaqueStore, onError: () => {} });
    const opaqueToken = await tokenFor(opaque.app);
    opaqueStore.reads.length = 0;
    expect((await call(opaque.app, opaqueToken)).status).toBe(500);
    expect(opaqueStore.reads.map(([kind]) => kind)).toEqual(['access_token']);
  });

  it('guard({ revocation: "store" }) reads only the revocation list and the levers\' markers, never the token record', async () => {
    const store = new NoTokenReadStore(new MemoryStore());
    const { app, netauth } = createTestGateway({ ...JWT_OPTIONS, store });
    app.post(
      '/strict',
      netauth.guard({ scope: 'sim-swap', revocation: 'store' }),
      (_req, res) => void res.json({ ok: true }),
    );
    const token = await tokenFor(app);
    store.reads.length = 0;
    const res = await request(app).post('/strict').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    // The token's jti and grant in the revocation list; its subscriber's and client's not-before markers.
    expect(store.reads.map(([kind, id]) => `${kind} ${id.split(':')[0]}`)).toEqual([
      'revoked jti',
      'revoked grant',
      'not_before subscriber',
      'not_before client',
    ]);
  });

  it('rejects a tampered token', async () => {
    const { app } = createTestGateway(JWT_OPTIONS);
    const token = await tokenFor(app);
    for (const forged of [
      tamper(token, (c) => (c.sub = 'sub-bob')),
      tamper(token, (c) => (c.subscriber_sealed = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')),
      tamper(token, (c) => (c.scope = LOCATION)),
      tamper(token, (c) => (c.exp = (c.exp as number) + 1)),
    ]) {
      const res = await call(app, forged);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    }
    // One flipped bit of the payload, re-encoded.
    const [h, p, s] = token.split('.') as [string, string, string];
    const bytes = Buffer.from(p, 'base64url');
    bytes[10] = bytes[10]! ^ 0x01;
    expect((await call(app, `${h}.${bytes.toString('base64url')}.${s}`)).status).toBe(401);
    expect((await call(app, token)).status).toBe(200);
  });

  it('rejects an expired token (the gateway clock)', async () => {
    const { app, clock } = createTestGateway(JWT_OPTIONS);
    const token = await tokenFor(app);
    clock.advance(3599);
    expect((await call(app, token)).status).toBe(200);
    clock.advance(1);
    const res = await call(app, token);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('rejects a token signed by a key not in the set, and alg none', async () => {
    const { app, clock } = createTestGateway(JWT_OPTIONS);
    const genuine = decodeJwt(await tokenFor(app));
    const iat = Math.floor(clock.now / 1000);
    const forge = (key: JWK, kid: string | undefined) =>
      new SignJWT({ ...genuine, iat, exp: iat + 600 })
        .setProtectedHeader(kid === undefined ? { alg: 'RS256', typ: 'at+jwt' } : { alg: 'RS256', kid, typ: 'at+jwt' })
        .sign(key);
    // Same kid as the real key, other key material.
    expect((await call(app, await forge(FOREIGN_KEY, 'key-a'))).status).toBe(401);
    // A kid the gateway does not publish, and no kid at all.
    expect((await call(app, await forge(KEY_B, 'key-b'))).status).toBe(401);
    expect((await call(app, await forge(KEY_B, undefined))).status).toBe(401);
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(JSON.stringify(genuine)).toString('base64url')}.`;
    expect((await call(app, unsigned)).status).toBe(401);
  });

  it('rejects a JWT of the right key that is not an access token (an ID token)', async () => {
    const { app } = createTestGateway({ ...JWT_OPTIONS, idTokens: true });
    const res = await pollToken(app, await startBackchannel(app, 'tel:+34600000001', `openid ${SIM_SWAP}`));
    expect(res.body.id_token).toEqual(expect.any(String));
    expect((await call(app, res.body.id_token as string)).status).toBe(401);
    expect((await call(app, res.body.access_token as string)).status).toBe(200);
  });

  it('rejects one revoked via /revoke, at once', async () => {
    const { app } = createTestGateway(JWT_OPTIONS);
    const token = await tokenFor(app);
    const other = await tokenFor(app);
    expect((await call(app, token)).status).toBe(200);
    expect((await revoke(app, token)).status).toBe(200);
    const res = await call(app, token);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    // Only that token.
    expect((await call(app, other)).status).toBe(200);
  });

  it('rejects one whose consent was revoked (and only those)', async () => {
    const { app, netauth } = createTestGateway(JWT_OPTIONS);
    await netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    const location = await tokenFor(app, LOCATION);
    const simSwap = await tokenFor(app, SIM_SWAP);
    const get = (token: string) => request(app).get('/location').set('Authorization', `Bearer ${token}`);
    expect((await get(location)).status).toBe(200);
    expect(await netauth.consent.revoke({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION })).toBe(
      true,
    );
    expect((await get(location)).status).toBe(401);
    // sim-swap rests on legitimate interest, not on that consent.
    expect((await call(app, simSwap)).status).toBe(200);
  });

  it('rejects one whose consent was refused after issuance', async () => {
    const { app, netauth } = createTestGateway(JWT_OPTIONS);
    await netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    const location = await tokenFor(app, LOCATION);
    await netauth.consent.deny({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    expect((await request(app).get('/location').set('Authorization', `Bearer ${location}`)).status).toBe(401);
  });

  it('still answers insufficient_scope and checks the purpose', async () => {
    const { app, netauth } = createTestGateway(JWT_OPTIONS);
    app.post(
      '/verify',
      netauth.guard({ scope: 'sim-swap', purpose: 'RequestedServiceProvision' }),
      (_req, res) => void res.json({}),
    );
    const token = await tokenFor(app);
    const location = await request(app).get('/location').set('Authorization', `Bearer ${token}`);
    expect(location.status).toBe(403);
    expect(location.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect((await request(app).post('/verify').set('Authorization', `Bearer ${token}`)).status).toBe(403);
  });

  it('opaque tokens issued before a switch to JWT keep working', async () => {
    const store = new MemoryStore({ now: () => 1_800_000_000_000 });
    const before = createTestGateway({ store });
    const opaque = await tokenFor(before.app);
    const after = createTestGateway({ ...JWT_OPTIONS, store });
    expect((await call(after.app, opaque)).status).toBe(200);
    expect((await revoke(after.app, opaque)).status).toBe(200);
    expect((await call(after.app, opaque)).status).toBe(401);
  });
});

describe("the guard verifies its own tokens as jose's jwtVerify did", () => {
  // The options the guard gave jwtVerify before it verified through node:crypto; every token below must get the
  // same answer from both.
  const joseAccepts = (token: string, jwks: { keys: JWK[] }, now: number) =>
    jwtVerify(token, createLocalJWKSet(jwks), {
      issuer: ISSUER,
      audience: ISSUER,
      typ: 'at+jwt',
      algorithms: ['RS256'],
      currentDate: new Date(now),
      requiredClaims: ['sub', 'exp', 'iat', 'jti'],
    }).then(
      () => true,
      () => false,
    );

  it('every header and registered claim the old checks looked at', async () => {
    const { app, clock } = createTestGateway(JWT_OPTIONS);
    const genuine = decodeJwt(await tokenFor(app));
    const jwks = (await request(app).get('/apigateway/jwks')).body as { keys: JWK[] };
    const now = Math.floor(clock.now / 1000);
    const header = { alg: 'RS256', kid: 'key-a', typ: 'at+jwt' };
    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>, boolean]> = [
      ['as issued', header, {}, true],
      ['typ in capitals', { ...header, typ: 'AT+JWT' }, {}, true],
      ['typ as a full media type', { ...header, typ: 'application/at+jwt' }, {}, true],
      ['typ JWT (an ID token)', { ...header, typ: 'JWT' }, {}, false],
      ['typ application/jwt', { ...header, typ: 'application/jwt' }, {}, false],
      ['no typ', { alg: 'RS256', kid: 'key-a' }, {}, false],
      ['no kid', { alg: 'RS256', typ: 'at+jwt' }, {}, true],
      ['alg PS256 with the RS256 key', { ...header, alg: 'PS256' }, {}, false],
      ['another issuer', header, { iss: 'https://other.example' }, false],
      ['aud a list holding the audience', header, { aud: ['https://other.example', ISSUER] }, true],
      ['aud a list without it', header, { aud: ['https://other.example'] }, false],
      ['no aud', header, { aud: undefined }, false],
      ['no iss', header, { iss: undefined }, false],
      ['no sub', header, { sub: undefined }, false],
      ['no jti', header, { jti: undefined }, false],
      ['no iat', header, { iat: undefined }, false],
      ['iat a string', header, { iat: String(now) }, false],
      ['no exp', header, { exp: undefined }, false],
      ['exp now', header, { exp: now }, false],
      ['exp in one second', header, { exp: now + 1 }, true],
      ['exp a string', header, { exp: String(now + 60) }, false],
      ['nbf now', header, { nbf: now }, true],
      ['nbf in one second', header, { nbf: now + 1 }, false],
      ['nbf a string', header, { nbf: String(now) }, false],
    ];
    for (const [name, protectedHeader, change, accepted] of cases) {
      const claims = { ...genuine, ...change };
      const signer = new SignJWT(claims).setProtectedHeader(protectedHeader as { alg: string });
      const token = await signer.sign(KEY_A_PRIVATE);
      expect([name, await joseAccepts(token, jwks, clock.now)]).toEqual([name, accepted]);
      expect([name, (await call(app, token)).status]).toEqual([name, accepted ? 200 : 401]);
    }
  });
});

describe('key rotation', () => {
  it('a token signed with the old key still verifies; new tokens use the new key', async () => {
    const store = new MemoryStore({ now: () => 1_800_000_000_000 });
    const before = createTestGateway({ ...JWT_OPTIONS, store, signingKeys: [KEY_A] });
    const old = await tokenFor(before.app);
    expect(decodeProtectedHeader(old).kid).toBe('key-a');

    // Rotated: B signs, A is still published until its tokens expire.
    const after = createTestGateway({ ...JWT_OPTIONS, store, signingKeys: [KEY_B, KEY_A] });
    expect((await call(after.app, old)).status).toBe(200);
    const fresh = await tokenFor(after.app);
    expect(decodeProtectedHeader(fresh).kid).toBe('key-b');
    expect((await call(after.app, fresh)).status).toBe(200);
    const jwks = await request(after.app).get('/apigateway/jwks');
    expect((jwks.body.keys as JWK[]).map((k) => k.kid)).toEqual(['key-b', 'key-a']);

    // A retired: its tokens no longer verify.
    const retired = createTestGateway({ ...JWT_OPTIONS, store, signingKeys: [KEY_B] });
    expect((await call(retired.app, old)).status).toBe(401);
    expect((await call(retired.app, fresh)).status).toBe(200);
  });

  it('kid defaults to the RFC 7638 thumbprint', async () => {
    const { kid: _drop, ...noKid } = rsaKey();
    const { app } = createTestGateway({ ...JWT_OPTIONS, signingKeys: [noKid] });
    const token = await tokenFor(app);
    const kid = decodeProtectedHeader(token).kid;
    expect(kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { calculateJwkThumbprint } = await import('jose');
    expect(kid).toBe(await calculateJwkThumbprint({ kty: 'RSA', n: noKid.n!, e: noKid.e! }));
    expect((await call(app, token)).status).toBe(200);
  });

  it('EC P-256 keys sign ES256', async () => {
    const { app } = createTestGateway({ ...JWT_OPTIONS, signingKeys: [ecKey('ec-1')] });
    const token = await tokenFor(app);
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'ES256', kid: 'ec-1', typ: 'at+jwt' });
    expect((await call(app, token)).status).toBe(200);
    const metadata = await request(app).get('/apigateway/.well-known/openid-configuration');
    expect(metadata.body.id_token_signing_alg_values_supported).toEqual(['ES256']);
  });
});

describe('revocation across instances sharing a store', () => {
  function instance(store: MemoryStore) {
    const netauth = createNetAuth({
      issuer: ISSUER,
      clients: CLIENTS,
      subscribers: SUBSCRIBERS,
      consentPolicy: POLICY,
      store,
      now: () => 1_800_000_000_000,
      ...JWT_OPTIONS,
    });
    const app = express();
    app.use('/apigateway', netauth.router);
    app.post('/local', netauth.guard({ scope: 'sim-swap' }), (_req, res) => void res.json({}));
    app.post('/store', netauth.guard({ scope: 'sim-swap', revocation: 'store' }), (_req, res) => void res.json({}));
    return { app, netauth };
  }

  it("local mode misses another instance's revocation; store mode sees it", async () => {
    const store = new MemoryStore({ now: () => 1_800_000_000_000 });
    const { app: a } = instance(store);
    const { app: b } = instance(store);
    const token = await tokenFor(a);
    expect((await revoke(a, token)).status).toBe(200);
    const at = (app: Express, path: string) => request(app).post(path).set('Authorization', `Bearer ${token}`);
    expect((await at(a, '/local')).status).toBe(401);
    // The documented trade-off: B's local list has not heard of it.
    expect((await at(b, '/local')).status).toBe(200);
    expect((await at(b, '/store')).status).toBe(401);
    // B learnt it from the store: its local check now refuses the token too.
    expect((await at(b, '/local')).status).toBe(401);
  });

  it('a consent revoked on one instance is seen by the other in store mode', async () => {
    const store = new MemoryStore({ now: () => 1_800_000_000_000 });
    const a = instance(store);
    const b = instance(store);
    b.app.get(
      '/location',
      b.netauth.guard({ scope: 'device-location', revocation: 'store' }),
      (_req, res) => void res.json({}),
    );
    await a.netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    const token = await tokenFor(a.app, LOCATION);
    // The token carries the CIBA request's grant id and the consent's.
    expect(decodeJwt(token).grant_ids).toHaveLength(2);
    const get = () => request(b.app).get('/location').set('Authorization', `Bearer ${token}`);
    expect((await get()).status).toBe(200);
    await a.netauth.consent.revoke({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    expect((await get()).status).toBe(401);
  });
});
