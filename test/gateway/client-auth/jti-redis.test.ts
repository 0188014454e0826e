import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { CLIENTS, SIM_SWAP, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freshPrefix, redisServerMissing, skipRedisTests, useRedisServer } from '../../helpers/redis-server.js';
import { CAMARA_CLIENT, assertionFields, clientAssertion, requestObject } from '../../helpers/client-jwts.js';

const skip = skipRedisTests('the Redis jti tests');

/**
 * Single use of a client's JWT ids under concurrency, on Redis (the memory store's case is in
 * private-key-jwt.test.ts and request-objects.test.ts): 50 parallel requests carrying one client assertion, or
 * one request object, and exactly one is accepted. Two gateways share the Redis, as in production.
 */
describe.skipIf(skip)(`jti single use on Redis${skip ? ` (skipped: ${redisServerMissing()})` : ''}`, () => {
  const redis = useRedisServer();
  let gateways: TestGateway[];

  beforeAll(() => {
    const prefix = freshPrefix();
    gateways = [0, 1].map(() =>
      createTestGateway({ clients: [...CLIENTS, CAMARA_CLIENT], store: redis.store({ prefix }), rateLimits: false }),
    );
  });

  const now = () => Math.floor(gateways[0]!.clock.now / 1000);

  it('50 parallel uses of one client assertion over two gateways: exactly one accepted', async () => {
    const assertion = await clientAssertion({ now: now() });
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        request(gateways[i % 2]!.app)
          .post('/apigateway/introspect')
          .type('form')
          .send({ token: 'x', ...assertionFields(assertion) }),
      ),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 401 && r.body.error === 'invalid_client')).toHaveLength(49);
  });

  it('50 parallel uses of one signed bc-authorize request: exactly one auth_req_id', async () => {
    const signed = await requestObject({ login_hint: 'tel:+34600000001', scope: SIM_SWAP }, { now: now() });
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) =>
        request(gateways[i % 2]!.app)
          .post('/apigateway/bc-authorize')
          .type('form')
          .send({ request: signed, ...assertionFields(await clientAssertion({ now: now() })) }),
      ),
    );
    expect(answers.filter((r) => r.status === 200 && typeof r.body.auth_req_id === 'string')).toHaveLength(1);
    expect(answers.filter((r) => r.status === 400 && r.body.error === 'invalid_request_object')).toHaveLength(49);
  });
});
