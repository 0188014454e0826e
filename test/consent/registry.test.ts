/**
 * The consent registry contract (test/consent/registry-contract.ts) against the built-in registry on the memory
 * store and on a real Redis, and against a Consent Master over HTTP behind docs/consent.md's adapter; then the
 * gateway over each: withdrawing a consent kills its tokens at once, whichever registry holds it.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import {
  MemoryStore,
  RedisStore,
  StoreConsentRegistry,
  StaticConsentPolicy,
  type NetAuthOptions,
} from '../../lib/index.js';
import { APP1, LOCATION, POLICY, createTestGateway } from '../helpers/gateway.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';
import { RedisServer, freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import { startConsentMaster, type ConsentMasterFake } from './consent-master-fake.js';
import { HttpConsentMaster } from './http-consent-master.js';
import { describeConsentRegistryContract } from './registry-contract.js';
import { extractExamples } from '../package/docs-examples.js';

const skipRedis = skipRedisTests('the consent registry on Redis');
const policy = new StaticConsentPolicy(POLICY);

function clock() {
  const c = {
    now: 1_800_000_000_000,
    advance(seconds: number) {
      c.now += seconds * 1000;
    },
  };
  return c;
}

describeConsentRegistryContract('built-in, memory store', async () => {
  const c = clock();
  const store = new MemoryStore({ now: () => c.now });
  return {
    registry: new StoreConsentRegistry(store, policy, () => c.now),
    advance: c.advance,
    close: () => store.close(),
  };
});

describe.skipIf(skipRedis)('on a real Redis', () => {
  let server: RedisServer;
  beforeAll(async () => {
    requireRedisServer();
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server?.destroy();
  });

  describeConsentRegistryContract('built-in, Redis store', async () => {
    const c = clock();
    const store = new RedisStore({ url: server.url, prefix: freshPrefix() });
    return {
      registry: new StoreConsentRegistry(store, policy, () => c.now),
      advance: c.advance,
      close: () => store.close(),
    };
  });
});

describeConsentRegistryContract('a Consent Master over HTTP (the docs adapter)', async () => {
  const c = clock();
  const master = await startConsentMaster(() => c.now);
  return { registry: new HttpConsentMaster(master.url, master.token), advance: c.advance, close: master.close };
});

const ALICE = 'tel:+34600000001';
const CONSENT = { clientId: 'app-1', login_hint: ALICE, scope: LOCATION };

async function tokenUnderConsent(options: Partial<NetAuthOptions>) {
  const gw = createTestGateway(options);
  await gw.netauth.consent.grant(CONSENT);
  const res = await pollToken(gw.app, await startBackchannel(gw.app, ALICE, LOCATION));
  expect(res.status).toBe(200);
  const token = res.body.access_token as string;
  const call = () => request(gw.app).get('/location').set('Authorization', `Bearer ${token}`);
  expect((await call()).status).toBe(200);
  return { gw, call, token };
}

describe('the gateway over a Consent Master', () => {
  const c = clock();
  let master: ConsentMasterFake;
  let registry: HttpConsentMaster;
  let options: Partial<NetAuthOptions>;
  const subject = {
    clientId: 'app-1',
    subscriberId: 'sub-alice',
    purpose: 'FraudPreventionAndDetection',
    scopes: ['device-location'],
  };
  beforeAll(async () => {
    master = await startConsentMaster(() => c.now);
    registry = new HttpConsentMaster(master.url, master.token);
    options = { consentRegistry: registry, now: () => c.now };
  });
  afterAll(async () => {
    await master?.close();
  });

  it('reads consent from it: a grant there lets the CIBA poll through, a refusal there answers access_denied', async () => {
    const gw = createTestGateway(options);
    const id = await startBackchannel(gw.app, ALICE, LOCATION);
    expect((await pollToken(gw.app, id)).body.error).toBe('authorization_pending');
    master.record(subject);
    c.advance(5);
    expect((await pollToken(gw.app, id)).status).toBe(200);

    const next = await startBackchannel(gw.app, ALICE, LOCATION);
    await registry.deny(subject, { method: 'registry' });
    c.advance(5);
    expect((await pollToken(gw.app, next)).body.error).toBe('access_denied');
    await registry.revoke(subject, { at: c.now, by: 'registry', via: 'registry' });
  });

  it('netauth.consent.revoke withdraws there and the guard refuses the token at once', async () => {
    const { gw, call } = await tokenUnderConsent(options);
    expect(await gw.netauth.consent.revoke(CONSENT)).toBe(true);
    expect(await registry.list('sub-alice')).toEqual([]);
    expect((await call()).status).toBe(401);
  });

  it('withdrawn out-of-band in the Consent Master: netauth.consent.withdrawn(records) kills the tokens at once', async () => {
    const { gw, call, token } = await tokenUnderConsent(options);
    const removed = master.withdraw(subject);
    // Until the gateway is told, the token it issued still works.
    expect((await call()).status).toBe(200);
    await gw.netauth.consent.withdrawn(removed);
    expect((await call()).status).toBe(401);
    const introspection = await request(gw.app)
      .post('/apigateway/introspect')
      .set('Authorization', APP1)
      .type('form')
      .send({ token });
    expect(introspection.body).toEqual({ active: false });
  });

  it('a Consent Master that cannot be reached: the poll answers 500 server_error, never a token', async () => {
    const gw = createTestGateway({
      consentRegistry: new HttpConsentMaster('http://127.0.0.1:9/', 't'),
      onError: () => {},
    });
    const res = await pollToken(gw.app, await startBackchannel(gw.app, ALICE, LOCATION));
    expect(res.status).toBe(500);
    expect(res.body.access_token).toBeUndefined();
  });
});

describe('the built-in registry', () => {
  it('netauth.consent.revoke kills the token at once; list shows what is on record', async () => {
    const { gw, call } = await tokenUnderConsent({});
    expect((await gw.netauth.consent.list({ login_hint: ALICE })).map((r) => r.scope)).toEqual(['device-location']);
    expect(await gw.netauth.consent.revoke(CONSENT)).toBe(true);
    expect((await call()).status).toBe(401);
    expect(await gw.netauth.consent.list({ subscriberId: 'sub-alice' })).toEqual([]);
  });

  it('consentRegistry must implement the contract: a start-up error names what is missing', () => {
    expect(() => createTestGateway({ consentRegistry: { grant: async () => [] } as never })).toThrow(
      'consentRegistry must implement the ConsentRegistry contract (grant, deny, revoke, find, list) (missing: deny, revoke, find, list)',
    );
  });
});

describe('docs/consent.md', () => {
  it('shows the adapter this suite runs, line for line', () => {
    const examples = extractExamples('docs/consent.md', readFileSync('docs/consent.md', 'utf8'));
    const block = examples.find((e) => e.code.includes('class HttpConsentMaster'))?.code ?? '';
    const adapter = readFileSync('test/consent/http-consent-master.ts', 'utf8');
    expect(block).toContain(adapter.slice(adapter.indexOf('/** The operator')).trimEnd());
  });
});
