import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Request, Response } from 'express';
import { MemoryStore, type NetAuthAnyGrant, type NetAuthGrant, type Store } from '../../lib/index.js';
import { POPULATION, SERVICE_AUTH, createGrantsGateway, tokenRequest } from '../helpers/grants.js';
import { SIM_SWAP } from '../helpers/gateway.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';
import { KEY_A } from '../helpers/keys.js';
import { redisServerMissing, skipRedisTests, useRedisServer } from '../helpers/redis-server.js';

/**
 * Issue 42, finding 11: the grant a route gets is the same kind of object on every path. `scopes` was frozen for
 * JWT access tokens and MemoryStore records but a fresh array from a RedisStore record, so a route that sorted it
 * worked in production and threw in development. Now frozen everywhere; a route copies it to sort it.
 */

/** What a route sees of the grant's arrays. */
function report(grant: NetAuthAnyGrant | undefined, res: Response): void {
  const scopes = grant?.scopes as string[] | undefined;
  // A one-scope array sorts without a write: adding to it shows what a route that changes it meets.
  let change = 'changed';
  try {
    scopes?.push('another');
  } catch (error) {
    change = (error as Error).name;
  }
  res.json({ frozen: scopes !== undefined && Object.isFrozen(scopes), change });
}

function frozenTests(store: () => Store): void {
  for (const format of ['opaque', 'jwt'] as const) {
    it(`${format} access tokens: req.netauth.scopes and res.locals.netauth.scopes are frozen`, async () => {
      const gw = createGrantsGateway({
        store: store(),
        accessTokenFormat: format,
        ...(format === 'jwt' ? { signingKeys: [KEY_A] } : {}),
      });
      gw.app.post('/scopes', gw.netauth.guard({ scope: 'sim-swap' }), (req: Request, res: Response) =>
        report(req.netauth, res),
      );
      gw.app.get(
        '/scopes/two-legged',
        gw.netauth.guard({ scope: 'population-density', subscriber: 'optional' }),
        (_req, res) => report(res.locals.netauth, res),
      );

      const polled = await pollToken(gw.app, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP));
      const threeLegged = polled.body.access_token as string;
      const cc = await tokenRequest(gw.app, { grant_type: 'client_credentials', scope: POPULATION }, SERVICE_AUTH);
      const twoLegged = cc.body.access_token as string;

      // Twice each: the first call of a JWT verifies it, the second finds it verified.
      for (let i = 0; i < 2; i++) {
        const three = await request(gw.app).post('/scopes').set('Authorization', `Bearer ${threeLegged}`);
        expect(three.body).toEqual({ frozen: true, change: 'TypeError' });
        const two = await request(gw.app).get('/scopes/two-legged').set('Authorization', `Bearer ${twoLegged}`);
        expect(two.body).toEqual({ frozen: true, change: 'TypeError' });
      }
    });
  }
}

describe('the guard hands routes frozen scopes [memory]', () => {
  frozenTests(() => new MemoryStore());
});

const skip = skipRedisTests('the frozen-scopes tests on Redis');

describe.skipIf(skip)(
  `the guard hands routes frozen scopes [redis]${skip ? ` (skipped: ${redisServerMissing()})` : ''}`,
  () => {
    const redis = useRedisServer();
    frozenTests(() => redis.store());
  },
);

describe('the grant is read-only in its type (issue 45)', () => {
  it('a route cannot assign a member of req.netauth or res.locals.netauth: the type checker refuses it', () => {
    // Compiled by `tsc` (test/ is in tsconfig.json): each line is an error the checker must report.
    const change = (grant: NetAuthGrant, either: NetAuthAnyGrant): void => {
      // @ts-expect-error readonly
      grant.scope = 'another';
      // @ts-expect-error readonly
      grant.subscriber = { id: 'sub-bob' };
      // @ts-expect-error readonly
      grant.device = undefined;
      // @ts-expect-error readonly
      either.clientId = 'app-2';
    };
    expect(typeof change).toBe('function');
  });
});
