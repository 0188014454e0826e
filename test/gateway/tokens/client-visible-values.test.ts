import { createCipheriv, createHash, createPrivateKey, hkdfSync, randomBytes, type JsonWebKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { SignJWT, decodeJwt } from 'jose';
import {
  MemoryStore,
  type ConsentRecord,
  type NetAuthOptions,
  type StaticSubscriber,
  type Store,
} from '../../../lib/index.js';
import { redisServerMissing, skipRedisTests, useRedisServer } from '../../helpers/redis-server.js';
import { APP2, ISSUER, POLICY, SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { KEY_A } from '../../helpers/keys.js';
import { CALLBACK, authorize, location, redeem } from '../../helpers/frontend.js';
import {
  GRANTS_POLICY,
  OFFLINE_AUTH,
  POPULATION,
  SERVICE_AUTH,
  createGrantsGateway,
  refresh,
  tokenRequest,
} from '../../helpers/grants.js';

/**
 * Issue 42: what a client reads in a JWT access token tells it nothing about the subscriber beyond the pairwise
 * `sub`. Finding 3: the consent grant's id carried `sha256(client_id|subscriber_id)[0..8]`, so a client could test
 * guessed subscriber ids offline and two clients could link what they recovered. Finding 10: the sealed subscriber
 * id's length told the id's length.
 */

const JWT_OPTIONS: Partial<NetAuthOptions> = { accessTokenFormat: 'jwt', signingKeys: [KEY_A] };

/** Ids of the lengths the review measured (1, 15 and 49 characters: seals of 39, 58 and 103), and the bucket's edge. */
const IDS = ['x', '214070123456789', `nai:${'s'.repeat(41)}@ims`, 'y'.repeat(63), 'z'.repeat(64)];
const SUBSCRIBERS: StaticSubscriber[] = IDS.map((id, i) => ({
  id,
  phoneNumber: `+3460000010${i}`,
  addresses: [`10.20.1.${i + 1}`],
}));

async function tokenOf(app: Express, phoneNumber: string): Promise<string> {
  const res = await pollToken(app, await startBackchannel(app, `tel:${phoneNumber}`, SIM_SWAP));
  if (res.status !== 200) throw new Error(`token failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

const call = (app: Express, token: string) =>
  request(app).post('/sim-swap/check').set('Authorization', `Bearer ${token}`);

describe('the sealed subscriber id (issue 42, finding 10)', () => {
  it('has one length for every id of up to 63 bytes; a longer id takes the next 64-byte step; the guard opens each', async () => {
    const { app } = createTestGateway({ ...JWT_OPTIONS, subscribers: SUBSCRIBERS });
    const lengths: number[] = [];
    for (const subscriber of SUBSCRIBERS) {
      const token = await tokenOf(app, subscriber.phoneNumber!);
      lengths.push((decodeJwt(token).subscriber_sealed as string).length);
      expect((await call(app, token)).body.subscriber).toBe(subscriber.id);
    }
    // 12 bytes of nonce, 64 of padded id, 16 of tag: 92 bytes, 123 base64url characters; 64 more bytes past 63.
    expect(lengths).toEqual([123, 123, 123, 123, 208]);
  });

  it('a seal made before padding (an older instance of the fleet) still opens', async () => {
    const { app } = createTestGateway(JWT_OPTIONS);
    const genuine = decodeJwt(await tokenOf(app, '+34600000001'));
    // The unpadded seal of the version before: AES-256-GCM under the v1 key, the jti as additional data.
    const privateKey = createPrivateKey({ key: KEY_A as JsonWebKey, format: 'jwk' });
    const material = privateKey.export({ format: 'der', type: 'pkcs8' });
    const info = 'express-netauth access-token subscriber v1';
    const key = Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), info, 32));
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce).setAAD(Buffer.from(genuine.jti!, 'utf8'));
    const sealed = Buffer.concat([nonce, cipher.update('sub-alice', 'utf8'), cipher.final(), cipher.getAuthTag()]);
    const legacy = await new SignJWT({ ...genuine, subscriber_sealed: sealed.toString('base64url') })
      .setProtectedHeader({ alg: 'RS256', kid: 'key-a', typ: 'at+jwt' })
      .sign(privateKey);
    const res = await call(app, legacy);
    expect(res.status).toBe(200);
    expect(res.body.subscriber).toBe('sub-alice');
  });
});

/** Every string in a token's claims, and each part of it between dots (ids are `<tag>.<random>`). */
function claimParts(token: string): string[] {
  const parts: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') parts.push(value, ...value.split('.'));
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(decodeJwt(token));
  return parts;
}

/** Unkeyed digests a client could compute from a guessed subscriber id: SHA-256 of the usual joins, base64url and hex. */
function guessableDigests(clientIds: readonly string[], subscriberId: string): string[] {
  const inputs = [subscriberId, `subscriber|${encodeURIComponent(subscriberId)}`];
  for (const clientId of clientIds) {
    for (const join of ['|', '', ':', '.', '\n']) {
      inputs.push(
        `${clientId}${join}${subscriberId}`,
        `${encodeURIComponent(clientId)}${join}${encodeURIComponent(subscriberId)}`,
      );
    }
  }
  return inputs.flatMap((input) => {
    const digest = createHash('sha256').update(input, 'utf8').digest();
    return [digest.toString('base64url'), digest.toString('hex')];
  });
}

/** Whether `part` is a digest above or a prefix of one (6 characters or more: 36 bits a client could test). */
function derivedFrom(part: string, digests: readonly string[]): boolean {
  return part.length >= 6 && digests.some((digest) => digest.startsWith(part));
}

/** Consent (not legitimate interest) for sim-swap: its tokens rest on a consent grant whose id they carry. */
const CONSENT_POLICY = POLICY.map((rule) =>
  rule.scope === 'sim-swap' ? { ...rule, basis: 'consent' as const } : rule,
);

/** A consent record as the version before wrote it, found and rekeyed (issue 42, finding 3). */
function legacyConsentTest(name: string, makeStore: () => Store): void {
  it(`a consent recorded by an older version [${name}]: its grant id is rekeyed before a token carries it; withdrawing it reaches tokens of both ids`, async () => {
    const store = makeStore();
    const { app, netauth, clock } = createTestGateway({ ...JWT_OPTIONS, consentPolicy: CONSENT_POLICY, store });
    // The record as the version before wrote it: its id and its grant id placed by sha256(client|subscriber).
    const tag = createHash('sha256').update('app-1|sub-alice', 'utf8').digest('base64url').slice(0, 8);
    const legacyGrantId = `${tag}.${randomBytes(16).toString('base64url')}`;
    const record: ConsentRecord = {
      clientId: 'app-1',
      subscriberId: 'sub-alice',
      purpose: 'FraudPreventionAndDetection',
      scope: 'sim-swap',
      status: 'granted',
      decidedAt: clock.now,
      expiresAt: clock.now + 86_400_000,
      grantId: legacyGrantId,
    };
    const recordId = `${tag}.${['app-1', 'sub-alice', 'FraudPreventionAndDetection', 'sim-swap'].join('|')}`;
    await store.put('consent', recordId, record, { ttl: 86_400 });

    // A token the version before issued under that consent, as it would have signed it.
    const fresh = await tokenOf(app, '+34600000001');
    const [rekeyed] = (await netauth.consent.lookup({
      clientId: 'app-1',
      subscriberId: 'sub-alice',
      scope: SIM_SWAP,
    }))!;
    expect(rekeyed!.grantId).not.toBe(legacyGrantId);
    expect(rekeyed!.grantId.startsWith(`${tag}.`)).toBe(false);
    expect(rekeyed!.formerGrantId).toBe(legacyGrantId);
    expect(decodeJwt(fresh).grant_ids).toContain(rekeyed!.grantId);
    expect(decodeJwt(fresh).grant_ids).not.toContain(legacyGrantId);

    const privateKey = createPrivateKey({ key: KEY_A as JsonWebKey, format: 'jwk' });
    const claims = decodeJwt(fresh);
    const olderToken = await new SignJWT({
      ...claims,
      jti: `${tag}.${randomBytes(16).toString('base64url')}`,
      grant_ids: [(claims.grant_ids as string[])[0]!, legacyGrantId],
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'key-a', typ: 'at+jwt' })
      .sign(privateKey);
    expect((await call(app, fresh)).status).toBe(200);

    expect(await netauth.consent.revoke({ clientId: 'app-1', subscriberId: 'sub-alice', scope: SIM_SWAP })).toBe(true);
    expect((await call(app, fresh)).status).toBe(401);
    expect((await call(app, olderToken)).status).toBe(401);
  });
}

describe('the consent grant ids in JWT access tokens (issue 42, finding 3)', () => {
  it('two clients holding tokens for one subscriber: no claim is an unkeyed digest of it, and they share no value of it', async () => {
    const { app, netauth } = createTestGateway({ ...JWT_OPTIONS, consentPolicy: CONSENT_POLICY });
    const tokens: string[] = [];
    for (const [clientId, authorization] of [
      ['app-1', undefined],
      ['app-2', APP2],
    ] as const) {
      await netauth.consent.grant({ clientId, subscriberId: 'sub-alice', scope: SIM_SWAP });
      const polled = await pollToken(
        app,
        await startBackchannel(app, 'tel:+34600000001', SIM_SWAP, authorization),
        authorization,
      );
      expect(polled.status).toBe(200);
      tokens.push(polled.body.access_token as string);
    }
    const [one, two] = tokens.map(claimParts) as [string[], string[]];
    // The token rests on its authorization's grant and the consent's.
    expect(decodeJwt(tokens[0]!).grant_ids).toHaveLength(2);
    const digests = guessableDigests(['app-1', 'app-2'], 'sub-alice');
    for (const part of [...one, ...two]) expect(derivedFrom(part, digests)).toBe(false);
    // What the two tokens share is what every token of this gateway and scope says (and how the subscriber was
    // identified, a kind: tel, with its amr): nothing of the subscriber.
    const shared = new Set(one.filter((part) => two.includes(part)));
    const common = [
      ISSUER,
      'http://gateway',
      'test/apigateway',
      SIM_SWAP,
      'FraudPreventionAndDetection',
      'tel',
      'hint',
    ];
    expect([...shared].filter((part) => !common.includes(part))).toEqual([]);
  });

  legacyConsentTest('memory', () => new MemoryStore());
});

/** Every string a client is handed in a response: body values, the redirect's parameters, and every JWT's parts. */
function collect(into: string[], value: unknown): void {
  if (typeof value === 'string') {
    into.push(value, ...value.split('.'));
    if (/^[\w-]+\.[\w-]+\.[\w-]*$/.test(value)) {
      const [header, payload] = value.split('.') as [string, string];
      for (const part of [header, payload]) {
        try {
          collect(into, JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
        } catch {
          // Not a JWT after all.
        }
      }
    }
  } else if (Array.isArray(value)) {
    for (const v of value) collect(into, v);
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) collect(into, v);
  }
}

describe('no value a client is handed is an unkeyed digest of an identifier (issue 42)', () => {
  for (const format of ['opaque', 'jwt'] as const) {
    it(`${format} access tokens: CIBA, code, refresh, client credentials, ID tokens and introspection`, async () => {
      const gw = createGrantsGateway({
        accessTokenFormat: format,
        signingKeys: [KEY_A],
        idTokens: true,
        consentPolicy: GRANTS_POLICY.map((rule) =>
          rule.scope === 'sim-swap' ? { ...rule, basis: 'consent' as const } : rule,
        ),
      });
      const handed: string[] = [];
      const keep = (res: request.Response) => {
        expect(res.status).toBeLessThan(400);
        collect(handed, res.body);
        if (res.headers.location !== undefined) collect(handed, [...location(res).searchParams.values()]);
        return res;
      };
      for (const clientId of ['app-1', 'offline-app']) {
        await gw.netauth.consent.grant({ clientId, subscriberId: 'sub-alice', scope: SIM_SWAP });
      }
      // CIBA with an ID token and a refresh token, then the refresh.
      const scope = `openid offline_access ${SIM_SWAP}`;
      const started = keep(
        await request(gw.app)
          .post('/apigateway/bc-authorize')
          .set('Authorization', OFFLINE_AUTH)
          .type('form')
          .send({ login_hint: 'tel:+34600000001', scope }),
      );
      const ciba = keep(await pollToken(gw.app, started.body.auth_req_id as string, OFFLINE_AUTH));
      const refreshed = keep(await refresh(gw.app, ciba.body.refresh_token as string));
      for (const token of [refreshed.body.access_token as string, refreshed.body.refresh_token as string]) {
        keep(
          await request(gw.app)
            .post('/apigateway/introspect')
            .set('Authorization', OFFLINE_AUTH)
            .type('form')
            .send({ token }),
        );
      }
      // The code flow from the subscriber's line, with an ID token.
      const redirected = keep(
        await authorize(gw.app, { scope: `openid ${SIM_SWAP}`, nonce: 'n-1' }, { ip: '10.20.0.1' }),
      );
      const code = location(redirected).searchParams.get('code')!;
      keep(await redeem(gw.app, { code, redirect_uri: CALLBACK }));
      // Client credentials: no subscriber, but a client id.
      keep(await tokenRequest(gw.app, { grant_type: 'client_credentials', scope: POPULATION }, SERVICE_AUTH));

      expect(handed.length).toBeGreaterThan(50);
      const digests = [
        ...guessableDigests(['app-1', 'offline-app', 'service-app'], 'sub-alice'),
        ...guessableDigests(['app-1', 'offline-app', 'service-app'], '+34600000001'),
        ...guessableDigests([], 'service-app'),
      ];
      for (const part of handed) {
        expect(derivedFrom(part, digests), part).toBe(false);
        expect(part).not.toContain('sub-alice');
        expect(part).not.toContain('34600000001');
      }
    });
  }
});

const skipRedis = skipRedisTests('the consent grant rekeying on Redis');

describe.skipIf(skipRedis)(
  `the consent grant ids on Redis (issue 42, finding 3)${skipRedis ? ` (skipped: ${redisServerMissing()})` : ''}`,
  () => {
    const redis = useRedisServer();
    legacyConsentTest('redis', () => redis.store());
  },
);
