import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { RedisStore } from '../../../lib/index.js';
import { CALLBACK, codeFor, redeem } from '../../helpers/frontend.js';
import { KEY_A } from '../../helpers/keys.js';
import { RedisServer, redisServerMissing, requireRedisServer, skipRedisTests } from '../../helpers/redis-server.js';
import { RedisCluster } from '../../helpers/redis-cluster.js';
import {
  OFFLINE_AUTH,
  bearerAssertion,
  callService,
  createGrantsGateway,
  refresh,
  tokenRequest,
  JWT_BEARER,
} from '../../helpers/grants.js';
import type { TestGateway } from '../../helpers/gateway.js';

const skip = skipRedisTests('the Redis tests of refresh tokens and single-use tokens');

/**
 * Single use under concurrency on Redis (the memory store's cases are in refresh-token.test.ts and
 * test/guard/single-use.test.ts): two gateways share one Redis, as in production, on a single server and on a
 * Redis Cluster of three masters (where the new tokens must land on the shard of the refresh token they replace).
 */
describe.skipIf(skip)(
  `refresh and single-use tokens on Redis${skip ? ` (skipped: ${redisServerMissing()})` : ''}`,
  () => {
    let server: RedisServer;
    let cluster: RedisCluster;
    const stores: RedisStore[] = [];

    beforeAll(async () => {
      requireRedisServer();
      [server, cluster] = await Promise.all([RedisServer.start(), RedisCluster.start({ masters: 3 })]);
    }, 60_000);

    afterAll(async () => {
      for (const store of stores) await store.close();
      await server?.destroy();
      await cluster?.destroy();
    });

    /** Two gateways on one Redis, with the same signing key (JWT access tokens verify on both). */
    async function pair(where: 'server' | 'cluster', format: 'opaque' | 'jwt'): Promise<[TestGateway, TestGateway]> {
      const prefix = `netauth-test-${randomUUID().slice(0, 8)}:`;
      const gateways = await Promise.all(
        [0, 1].map(async () => {
          const store = new RedisStore({ url: where === 'server' ? server.url : cluster.nodes[0]!.url, prefix });
          await store.open();
          stores.push(store);
          return createGrantsGateway({ store, rateLimits: false, accessTokenFormat: format, signingKeys: [KEY_A] });
        }),
      );
      return gateways as [TestGateway, TestGateway];
    }

    describe.each([
      ['one Redis server', 'server'],
      ['a Redis Cluster', 'cluster'],
    ] as const)('%s', (_name, where) => {
      it.each(['opaque', 'jwt'] as const)(
        '50 parallel refreshes of one token over two gateways (%s): one new pair of tokens in every answer; a reuse later revokes the grant',
        async (format) => {
          const [a, b] = await pair(where, format);
          const code = await codeFor(a, {
            client_id: 'offline-app',
            scope: 'dpv:FraudPreventionAndDetection#sim-swap offline_access',
          });
          const first = (await redeem(a.app, { code, redirect_uri: CALLBACK }, OFFLINE_AUTH)).body as Record<
            string,
            string
          >;
          expect(first.refresh_token).toBeDefined();
          const answers = await Promise.all(
            Array.from({ length: 50 }, (_, i) => refresh((i % 2 ? a : b).app, first.refresh_token!)),
          );
          // The client's duplicates within lifetimes.redemptionRetry get the one answer, on either instance.
          expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
          expect(new Set(answers.map((r) => r.body.refresh_token)).size).toBe(1);
          const ok = answers;
          // After it, a reuse: revoked on both instances (for JWT access tokens, the instance that saw the reuse,
          // and the store's list).
          for (const gw of [a, b]) gw.clock.advance(31);
          expect((await refresh(a.app, first.refresh_token!)).body.error).toBe('invalid_grant');
          expect((await refresh(b.app, ok[0]!.body.refresh_token as string)).body.error).toBe('invalid_grant');
          const guard = format === 'opaque' ? [a, b] : [];
          for (const gw of guard)
            expect((await callService(gw.app, ok[0]!.body.access_token as string)).status).toBe(401);
        },
      );

      it('a rotation then a reuse, on different instances: invalid_grant, and the opaque access tokens are refused on both', async () => {
        const [a, b] = await pair(where, 'opaque');
        const code = await codeFor(a, {
          client_id: 'offline-app',
          scope: 'dpv:FraudPreventionAndDetection#sim-swap offline_access',
        });
        const first = (await redeem(a.app, { code, redirect_uri: CALLBACK }, OFFLINE_AUTH)).body as Record<
          string,
          string
        >;
        const second = await refresh(b.app, first.refresh_token!);
        expect(second.status).toBe(200);
        expect((await callService(a.app, second.body.access_token as string)).status).toBe(200);
        // Past lifetimes.redemptionRetry: no longer the client's retry of one refresh.
        for (const gw of [a, b]) gw.clock.advance(31);
        expect((await refresh(a.app, first.refresh_token!)).body.error).toBe('invalid_grant');
        for (const gw of [a, b]) {
          expect((await callService(gw.app, first.access_token!)).status).toBe(401);
          expect((await callService(gw.app, second.body.access_token as string)).status).toBe(401);
        }
      });

      it.each(['opaque', 'jwt'] as const)(
        'a single-use token (%s), 50 parallel calls over two gateways: exactly one 200, then 401',
        async (format) => {
          const [a, b] = await pair(where, format);
          const assertion = await bearerAssertion(
            'tel:+34600000001',
            'dpv:FraudPreventionAndDetection number-verification',
            { now: Math.floor(a.clock.now / 1000) },
          );
          const issued = await tokenRequest(a.app, { grant_type: JWT_BEARER, assertion });
          expect(issued.status).toBe(200);
          expect(issued.body.expires_in).toBe(300);
          const token = issued.body.access_token as string;
          const calls = await Promise.all(
            Array.from({ length: 50 }, (_, i) =>
              callService((i % 2 ? a : b).app, token, '/number-verification/verify'),
            ),
          );
          expect(calls.filter((r) => r.status === 200)).toHaveLength(1);
          expect(
            calls.filter((r) => r.status === 401 && String(r.headers['www-authenticate']).includes('invalid_token')),
          ).toHaveLength(49);
          expect((await callService(b.app, token, '/number-verification/verify')).status).toBe(401);
        },
      );

      it('how the subscriber was identified is kept in Redis: a code grant (network) through its refresh, a CIBA tel: grant', async () => {
        const [a, b] = await pair(where, 'opaque');
        const introspect = (gw: TestGateway, token: string) =>
          request(gw.app)
            .post('/apigateway/introspect')
            .set('Authorization', OFFLINE_AUTH)
            .type('form')
            .send({ token });
        const code = await codeFor(a, {
          client_id: 'offline-app',
          scope: 'dpv:FraudPreventionAndDetection#sim-swap offline_access',
        });
        const first = (await redeem(a.app, { code, redirect_uri: CALLBACK }, OFFLINE_AUTH)).body as Record<
          string,
          string
        >;
        const second = await refresh(b.app, first.refresh_token!);
        for (const token of [
          first.access_token!,
          second.body.refresh_token as string,
          second.body.access_token as string,
        ])
          expect((await introspect(a, token)).body).toMatchObject({
            active: true,
            identified_by: 'network',
            amr: ['hwk'],
          });
        const started = await request(b.app)
          .post('/apigateway/bc-authorize')
          .set('Authorization', OFFLINE_AUTH)
          .type('form')
          .send({ login_hint: 'tel:+34600000001', scope: 'dpv:FraudPreventionAndDetection sim-swap' });
        const polled = await tokenRequest(
          a.app,
          { grant_type: 'urn:openid:params:grant-type:ciba', auth_req_id: started.body.auth_req_id as string },
          OFFLINE_AUTH,
        );
        expect((await introspect(b, polled.body.access_token as string)).body).toMatchObject({
          identified_by: 'tel',
          amr: ['hint'],
        });
      });
    });
  },
);
