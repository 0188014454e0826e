import { createCipheriv, createPrivateKey, hkdfSync, randomBytes, type JsonWebKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { SignJWT, decodeJwt } from 'jose';
import type { NetAuthOptions, StaticSubscriber } from '../../../lib/index.js';
import { SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { KEY_A } from '../../helpers/keys.js';

/**
 * Issue 42: what a client reads in a JWT access token tells it nothing about the subscriber beyond the pairwise
 * `sub`. Finding 10: the sealed subscriber id's length told the id's length.
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
