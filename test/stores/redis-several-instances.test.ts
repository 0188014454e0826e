import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express, { type Express } from 'express';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import request from 'supertest';
import { createNetAuth, RedisStore, type NetAuth, type NetAuthOptions } from '../../lib/index.js';
import { APP1, CIBA, CLIENTS, MOBILE_RANGES, POLICY, SUBSCRIBERS } from '../helpers/gateway.js';
import { ALICE_IP, CALLBACK, LOCATION, consentForm, cookies, formTarget } from '../helpers/frontend.js';
import { ecKey } from '../helpers/keys.js';
import { RedisServer, freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';

/**
 * docs/redis-store.md's several-instances checklist, followed as written, is what two instances need (issue 44):
 * two gateways on one Redis, each with its own RedisStore and every option the checklist names, start in
 * production mode; an ID token signed by one verifies at the other's /jwks and names the same pairwise `sub`
 * the other's introspection gives; the consent page one instance opened is shown and answered by the other.
 */

const ISSUER = 'https://gateway.test/apigateway';
const OPENID_SIM_SWAP = 'openid dpv:FraudPreventionAndDetection#sim-swap';

/** What the checklist says every instance has the same of, besides the Redis and the prefix. */
const CHECKLIST = {
  mode: 'production',
  issuer: ISSUER,
  clients: CLIENTS,
  subscribers: SUBSCRIBERS,
  consentPolicy: POLICY,
  network: { mobileRanges: MOBILE_RANGES },
  signingKeys: [ecKey('gw-2026-01')],
  pairwiseSalt: 'a-long-random-salt-every-instance-shares',
  consentPage: { cookieSecret: 'a-long-random-cookie-secret-every-instance-shares' },
} satisfies Omit<NetAuthOptions, 'store'>;

interface Instance {
  app: Express;
  netauth: NetAuth;
  store: RedisStore;
}

/** One instance behind the operator's TLS edge (loopback): X-Forwarded-For is the device, X-Forwarded-Proto https. */
async function instance(url: string, prefix: string, overrides: Partial<NetAuthOptions> = {}): Promise<Instance> {
  const store = new RedisStore({ url, prefix });
  await store.open();
  const netauth = createNetAuth({ ...CHECKLIST, store, ...overrides });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use('/apigateway', netauth.router);
  return { app, netauth, store };
}

const edge = (test: request.Test) => test.set('X-Forwarded-For', ALICE_IP).set('X-Forwarded-Proto', 'https');

/** An approved CIBA request for openid on `on` (sim-swap needs no consent): the token response. */
async function idTokenFrom(on: Instance): Promise<{ id_token: string; access_token: string }> {
  const started = await request(on.app)
    .post('/apigateway/bc-authorize')
    .set('Authorization', APP1)
    .type('form')
    .send({ login_hint: 'tel:+34600000001', scope: OPENID_SIM_SWAP });
  expect(started.status).toBe(200);
  const token = await request(on.app)
    .post('/apigateway/token')
    .set('Authorization', APP1)
    .type('form')
    .send({ grant_type: CIBA, auth_req_id: started.body.auth_req_id as string });
  expect(token.status).toBe(200);
  return token.body as { id_token: string; access_token: string };
}

async function jwksOf(on: Instance): Promise<JSONWebKeySet> {
  const jwks = await request(on.app).get('/apigateway/jwks');
  expect(jwks.status).toBe(200);
  return jwks.body as JSONWebKeySet;
}

const skip = skipRedisTests('the several-instances checklist test');

describe("docs/redis-store.md's several-instances checklist", () => {
  it('names every option the instances below must share (issue 44: it left out signingKeys and pairwiseSalt)', () => {
    const guide = readFileSync('docs/redis-store.md', 'utf8');
    const start = guide.indexOf('## Several instances behind a load balancer');
    const list = guide.slice(start, guide.indexOf('\n## ', start + 1));
    for (const option of ['prefix', 'signingKeys', 'pairwiseSalt', 'consentPage.cookieSecret', 'issuer', 'trust proxy'])
      expect(list).toContain(`\`${option}\``);
  });
});

describe.skipIf(skip)("docs/redis-store.md's several-instances checklist, on two instances in production mode", () => {
  let redis: RedisServer;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    requireRedisServer();
    redis = await RedisServer.start();
    const prefix = freshPrefix();
    [a, b] = await Promise.all([instance(redis.url, prefix), instance(redis.url, prefix)]);
  }, 30_000);

  afterAll(async () => {
    for (const i of [a, b]) {
      await i?.netauth.close();
      await i?.store.close();
    }
    await redis?.destroy();
  });

  it("an ID token from A verifies at B's /jwks, and its sub is the one B's introspection gives", async () => {
    const tokens = await idTokenFrom(a);
    const { payload } = await jwtVerify(tokens.id_token, createLocalJWKSet(await jwksOf(b)), {
      issuer: ISSUER,
      audience: 'app-1',
    });
    const introspected = await request(b.app)
      .post('/apigateway/introspect')
      .set('Authorization', APP1)
      .type('form')
      .send({ token: tokens.access_token });
    expect(introspected.body).toMatchObject({ active: true, sub: payload.sub });
  });

  it('the consent page A opened is shown and answered by B, and the code redeemed at A', async () => {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'app-1',
      redirect_uri: CALLBACK,
      scope: LOCATION,
      state: 'state-1',
    });
    const started = await edge(request(a.app).get(`/apigateway/authorize?${query}`));
    expect(started.status).toBe(302);
    const pageUrl = new URL(started.headers.location as string);
    expect(pageUrl.origin).toBe(new URL(ISSUER).origin);
    const cookie = cookies(started);
    const page = await edge(request(b.app).get(`${pageUrl.pathname}${pageUrl.search}`).set('Cookie', cookie));
    expect(page.status).toBe(200);
    const form = consentForm(page.text);
    const answered = await edge(
      request(b.app)
        .post(formTarget(`${pageUrl.pathname}${pageUrl.search}`, form.action))
        .set('Cookie', cookie)
        .type('form')
        .send({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' }),
    );
    expect(answered.status).toBe(303);
    const code = new URL(answered.headers.location as string).searchParams.get('code');
    expect(code).toBeTruthy();
    const token = await request(a.app)
      .post('/apigateway/token')
      .set('Authorization', APP1)
      .type('form')
      .send({ grant_type: 'authorization_code', code: code!, redirect_uri: CALLBACK });
    expect(token.status).toBe(200);
  });

  it('an instance that leaves out signingKeys, pairwiseSalt or consentPage.cookieSecret does not start', () => {
    for (const option of ['signingKeys', 'pairwiseSalt', 'consentPage'] as const) {
      const message = option === 'consentPage' ? 'consentPage.cookieSecret' : option;
      expect(() => createNetAuth({ ...CHECKLIST, store: a.store, [option]: undefined })).toThrow(
        new RegExp(`^${message.replace('.', '\\.')}: `),
      );
    }
  });
});
