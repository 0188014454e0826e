import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { MemoryStore, RATE_LIMIT_DEFAULTS, createNetAuth } from '../../../lib/index.js';
import { freshPrefix, redisServerMissing, skipRedisTests, useRedisServer } from '../../helpers/redis-server.js';
import { ask as ask_ } from '../../helpers/redis-cluster.js';
import { CLIENTS, ISSUER, SIM_SWAP, SUBSCRIBERS, basic } from '../../helpers/gateway.js';
import { listen } from '../../helpers/listen.js';
import { recordEvents } from '../../helpers/events.js';
import {
  GRANTS_CLIENTS,
  GRANTS_POLICY,
  OFFLINE_AUTH,
  POPULATION,
  SERVICE_AUTH,
  SERVICE_CLIENT,
  callService,
  createGrantsGateway,
  tokenRequest,
} from '../../helpers/grants.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';

/**
 * Client credentials (RFC 6749 §4.4, as the CAMARA profile allows them): two-legged tokens, only for scopes whose
 * policy rule says they process no personal data; the guard refuses them where a subscriber is needed (the
 * default) and lets them through on routes that opt in.
 */

const ask = (app: express.Express, scope: string | undefined, auth = SERVICE_AUTH) =>
  tokenRequest(
    app,
    scope === undefined ? { grant_type: 'client_credentials' } : { grant_type: 'client_credentials', scope },
    auth,
  );

describe.each(['opaque', 'jwt'] as const)('client_credentials grant (%s access tokens)', (format) => {
  const gateway = () => createGrantsGateway({ accessTokenFormat: format });

  it('a scope that processes no personal data: a token with no subscriber, no refresh token, no ID token', async () => {
    const gw = gateway();
    const events = recordEvents(gw.netauth);
    const res = await ask(gw.app, `${POPULATION} openid offline_access`);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(Object.keys(res.body as object).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
    // openid and offline_access cannot be honoured without a subscriber: left out of the granted scope.
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: POPULATION });
    expect(events.of('token.issued')).toEqual([
      {
        clientId: 'service-app',
        purpose: 'RequestedServiceProvision',
        scopes: ['population-density'],
        grantType: 'client_credentials',
        format,
        idToken: false,
        refreshToken: false,
        singleUse: false,
      },
    ]);
    if (format === 'jwt') {
      // RFC 9068 §2.2: with no resource owner, sub names the client.
      expect(decodeJwt(res.body.access_token as string)).toMatchObject({
        sub: 'service-app',
        client_id: 'service-app',
        two_legged: true,
      });
    }
  });

  it('1,000 requests of one client leave at most its cap of live tokens in the store; then 429', async () => {
    // Issue 32, finding 6: 100 per 3600 s by default; a client that needs more holds its token until it expires.
    const store = new MemoryStore();
    const other = { ...SERVICE_CLIENT, clientId: 'service-2' };
    const gw = createGrantsGateway({ accessTokenFormat: format, store, clients: [...GRANTS_CLIENTS, other] });
    const before = store.size;
    const statuses: number[] = [];
    let refused: request.Response | undefined;
    for (let batch = 0; batch < 20; batch++) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => ask(gw.app, POPULATION)));
      for (const res of answers) {
        statuses.push(res.status);
        if (res.status === 429) refused ??= res;
      }
    }
    const cap = RATE_LIMIT_DEFAULTS.clientCredentials.perClient.points;
    expect(statuses.filter((s) => s === 200)).toHaveLength(cap);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1000 - cap);
    expect(refused!.body.error).toBe('temporarily_unavailable');
    expect(Number(refused!.headers['retry-after'])).toBeGreaterThan(0);
    // Token records (and what indexes them) grow with the cap, not with the requests.
    expect(store.size - before).toBeLessThanOrEqual(2 * cap);
    // Another client is not held back by this one.
    expect((await ask(gw.app, POPULATION, basic('service-2', 'service-secret'))).status).toBe(200);
  });

  it('device identification under a two-legged token: an address gives the route the operator id, never the phone number', async () => {
    // Issue 32, item 10: any address a client names resolved to a subscriber record with its phone number.
    const gw = gateway();
    gw.app.post(
      '/population/device',
      gw.netauth.guard({ scope: 'population-density', subscriber: 'optional', errorFormat: 'camara', device: true }),
      (_req, res) => void res.json({ device: res.locals.netauth.device }),
    );
    const token = (await ask(gw.app, POPULATION)).body.access_token as string;
    const call = (device: object) =>
      request(gw.app).post('/population/device').set('Authorization', `Bearer ${token}`).send({ device });
    const byAddress = await call({ ipv4Address: { publicAddress: '10.20.0.2', privateAddress: '10.20.0.2' } });
    expect(byAddress.status).toBe(200);
    expect(byAddress.body.device).toEqual({
      identifiedBy: 'request',
      subscriber: { id: 'sub-bob' },
      identifier: { ipv4Address: { publicAddress: '10.20.0.2', privateAddress: '10.20.0.2' } },
    });
    expect(JSON.stringify(byAddress.body)).not.toContain('+34600000002');
    const byV6 = await call({ ipv6Address: '2001:db8::1' });
    expect(byV6.body.device.subscriber).toEqual({ id: 'sub-alice' });
    // A number the client sent is the only number the route sees.
    const byNumber = await call({ phoneNumber: '+34600000002' });
    expect(byNumber.body.device.subscriber).toEqual({ id: 'sub-bob', phoneNumber: '+34600000002' });
    expect((await call({ phoneNumber: '+34699999999' })).body.code).toBe('IDENTIFIER_NOT_FOUND');
  });

  it('the guard: 403 insufficient_scope where a subscriber is needed (the default), 200 on a route that opts in', async () => {
    const gw = gateway();
    const token = (await ask(gw.app, POPULATION)).body.access_token as string;
    const strict = await callService(gw.app, token, '/population/per-subscriber');
    expect(strict.status).toBe(403);
    expect(strict.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(strict.body.error).toBe('insufficient_scope');
    const open = await callService(gw.app, token, '/population');
    expect(open.status).toBe(200);
    expect(open.body).toEqual({ clientId: 'service-app', subscriber: null, onRequest: null });
  });

  it('a token with a subscriber passes the opted-in route too, and is on req.netauth there', async () => {
    const gw = gateway();
    const id = await startBackchannel(gw.app, 'tel:+34600000001', POPULATION, OFFLINE_AUTH);
    const token = (await pollToken(gw.app, id, OFFLINE_AUTH)).body.access_token as string;
    const res = await callService(gw.app, token, '/population');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ clientId: 'offline-app', subscriber: 'sub-alice', onRequest: 'sub-alice' });
  });

  it('introspection: active, no sub; revocation works', async () => {
    const gw = gateway();
    const token = (await ask(gw.app, POPULATION)).body.access_token as string;
    const introspected = await request(gw.app)
      .post('/apigateway/introspect')
      .set('Authorization', SERVICE_AUTH)
      .type('form')
      .send({ token });
    expect(introspected.body).toMatchObject({
      active: true,
      client_id: 'service-app',
      scope: POPULATION,
      token_type: 'Bearer',
      purpose: 'RequestedServiceProvision',
    });
    expect(introspected.body).not.toHaveProperty('sub');
    expect(
      (await request(gw.app).post('/apigateway/revoke').set('Authorization', SERVICE_AUTH).type('form').send({ token }))
        .status,
    ).toBe(200);
    expect((await callService(gw.app, token, '/population')).status).toBe(401);
  });

  it.each([
    ['a scope that processes personal data', SIM_SWAP],
    [
      'one personal-data scope among others',
      'dpv:RequestedServiceProvision population-density dpv:RequestedServiceProvision#sim-swap',
    ],
    ['a scope whose rule is forbidden', 'dpv:Marketing#population-density'],
  ])('%s: invalid_scope', async (_name, scope) => {
    const gw = gateway();
    const res = await ask(gw.app, scope);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
  });

  it('no scope: invalid_request (CAMARA makes it required); a scope the client is not registered for: invalid_scope', async () => {
    const gw = gateway();
    expect((await ask(gw.app, undefined)).body.error).toBe('invalid_request');
    expect((await ask(gw.app, 'dpv:FraudPreventionAndDetection#number-verification')).body.error).toBe('invalid_scope');
  });

  it('a client not registered for client_credentials: unauthorized_client', async () => {
    const gw = gateway();
    const res = await ask(gw.app, POPULATION, basic('app-1', CLIENTS[0]!.clientSecret!));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
  });
});

describe('interop: openid-client v6 clientCredentialsGrant', () => {
  let close: () => Promise<void>;
  let config: client.Configuration;

  beforeAll(async () => {
    const host = express();
    const server = await listen(host);
    host.use(createGrantsGateway({ issuer: `${server.url}/apigateway`, now: Date.now }).app);
    close = server.close;
    config = await client.discovery(
      new URL(`${server.url}/apigateway`),
      'service-app',
      undefined,
      client.ClientSecretBasic('service-secret'),
      {
        execute: [client.allowInsecureRequests],
      },
    );
  });
  afterAll(() => close());

  it('gets a two-legged token and calls an API that needs no subscriber', async () => {
    expect(config.serverMetadata().grant_types_supported).toContain('client_credentials');
    const tokens = await client.clientCredentialsGrant(config, { scope: POPULATION });
    expect(tokens.scope).toBe(POPULATION);
    expect(tokens.refresh_token).toBeUndefined();
    const api = await fetch(new URL('/population', config.serverMetadata().issuer), {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(api.status).toBe(200);
    const refused = await client.clientCredentialsGrant(config, { scope: SIM_SWAP }).catch((e: unknown) => e);
    expect((refused as client.ResponseBodyError).error).toBe('invalid_scope');
  });
});

describe('start-up checks of the new rule fields and grant registrations', () => {
  const options = { issuer: ISSUER, subscribers: SUBSCRIBERS };
  const start =
    (clients: unknown[], consentPolicy: unknown[] = GRANTS_POLICY, lifetimes = {}) =>
    () =>
      createNetAuth({ ...options, clients: clients as never, consentPolicy: consentPolicy as never, lifetimes });

  it.each([
    [
      'personalData: false with basis consent',
      [{ purpose: 'A', scope: 'b', basis: 'consent', personalData: false }],
      /personalData: false with basis 'consent'/,
    ],
    [
      'personalData not a boolean',
      [{ purpose: 'A', scope: 'b', basis: 'legitimate-interest', personalData: 'no' }],
      /personalData must be true or false/,
    ],
    [
      'accessTokenLifetime longer than lifetimes.accessToken',
      [{ purpose: 'A', scope: 'b', basis: 'legitimate-interest', accessTokenLifetime: 7200 }],
      /accessTokenLifetime .* it can only shorten tokens/,
    ],
    [
      'accessTokenLifetime not whole',
      [{ purpose: 'A', scope: 'b', basis: 'legitimate-interest', accessTokenLifetime: 1.5 }],
      /accessTokenLifetime/,
    ],
    [
      'singleUseAccessToken not a boolean',
      [{ purpose: 'A', scope: 'b', basis: 'legitimate-interest', singleUseAccessToken: 1 }],
      /singleUseAccessToken must be true or false/,
    ],
    [
      'a misspelt field',
      [{ purpose: 'A', scope: 'b', basis: 'legitimate-interest', personaldata: false }],
      /personalData/,
    ],
  ])('a policy rule with %s', (_name, policy, message) => {
    expect(start(CLIENTS, policy)).toThrow(message);
  });

  it.each([
    [
      'an unknown grant type',
      { ...SERVICE_CLIENT, grantTypes: ['password'] },
      /grantTypes: "password" is not a grant type of this gateway; use authorization_code or .* or urn:ietf:params:oauth:grant-type:jwt-bearer/,
    ],
    [
      'refresh_token without a grant to come from',
      { ...SERVICE_CLIENT, grantTypes: ['client_credentials', 'refresh_token'] },
      /refresh tokens come only from the authorization_code and CIBA grants/,
    ],
    [
      'the JWT bearer grant without keys',
      { ...SERVICE_CLIENT, grantTypes: ['urn:ietf:params:oauth:grant-type:jwt-bearer'] },
      /JWT bearer grant verifies assertions with the client's public keys: give jwks or jwksUri/,
    ],
  ])('a client with %s', (_name, registration, message) => {
    expect(start([registration])).toThrow(message);
  });

  it('lifetimes.refreshToken is a known option, checked like the others', () => {
    expect(start([SERVICE_CLIENT], GRANTS_POLICY, { refreshToken: 600 })).not.toThrow();
    expect(start([SERVICE_CLIENT], GRANTS_POLICY, { refreshToken: 0 })).toThrow(/lifetimes.refreshToken/);
  });

  it('discovery lists the grant types the registered clients use, no more', () => {
    const netauth = createNetAuth({ ...options, clients: [SERVICE_CLIENT], consentPolicy: GRANTS_POLICY });
    expect(netauth.metadata().grant_types_supported).toEqual(['client_credentials']);
    expect(netauth.metadata().scopes_supported).not.toContain('offline_access');
  });
});

const skipRedis = skipRedisTests('the client-credentials cap on Redis');

describe.skipIf(skipRedis)(
  `client-credentials cap on Redis, two gateways${skipRedis ? ` (skipped: ${redisServerMissing()})` : ''}`,
  () => {
    const redis = useRedisServer();

    it('400 requests of one client over two gateways leave at most its cap of token records in Redis; then 429', async () => {
      // Issue 32, finding 6: the cap is counted in Redis, so it holds for the fleet, not per instance.
      const prefix = freshPrefix();
      // A long Redis timeout: on a loaded machine a timeout would fail the lock-out closed (503) meanwhile.
      const [a, b] = [0, 1].map(() =>
        createGrantsGateway({ store: redis.store({ prefix }), rateLimits: { timeout: 10_000 } }),
      );
      const statuses: number[] = [];
      // 25 at once: the lock-out's shared slots admit 30 credential checks of one client and address in flight.
      for (let batch = 0; batch < 16; batch++) {
        const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => ask((i % 2 ? a! : b!).app, POPULATION)));
        statuses.push(...answers.map((r) => r.status));
      }
      const cap = RATE_LIMIT_DEFAULTS.clientCredentials.perClient.points;
      expect(statuses.filter((s) => s === 200)).toHaveLength(cap);
      expect(statuses.filter((s) => s === 429)).toHaveLength(400 - cap);
      // RedisStore keeps an access token under `<prefix>t`: one key per token issued, the cap's worth.
      expect(((await ask_(redis.server(), ['KEYS', `${prefix}t*`])) as string[]).length).toBe(cap);
    }, 60_000);
  },
);
