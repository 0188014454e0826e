import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import express from 'express';
import * as client from 'openid-client';
import {
  MemoryStore,
  type ClientRegistry,
  type JsonObject,
  type PutOptions,
  type RecordKind,
  type RecordWrite,
  type RegisteredClient,
} from '../../../lib/index.js';
import { CIBA, CLIENTS, SIM_SWAP, basic } from '../../helpers/gateway.js';
import { CALLBACK, LOCATION, codeFor, redeem } from '../../helpers/frontend.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { listen } from '../../helpers/listen.js';
import { recordEvents } from '../../helpers/events.js';
import {
  GRANTS_CLIENTS,
  GRANTS_POLICY,
  OFFLINE_AUTH,
  OFFLINE_CLIENT,
  callService,
  createGrantsGateway,
  refresh,
  tokenRequest,
} from '../../helpers/grants.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { ISSUER } from '../../helpers/gateway.js';
import { handProof, proofKey } from '../../helpers/dpop.js';

/**
 * Refresh tokens (the CAMARA profile's Offline Access; RFC 6749 §6, RFC 9700 §4.14): issued only with
 * `offline_access` to a client registered for `refresh_token`, from the code and CIBA grants; rotated on every
 * use; a reused one revokes its grant; consent and registration checked on every refresh; `scope` narrows.
 */

const ALICE = 'tel:+34600000001';
const OFFLINE = `${SIM_SWAP} offline_access`;

/** A code of offline-app for `scope`, redeemed: the token response. */
async function viaCode(gw: TestGateway, scope = OFFLINE): Promise<Record<string, string>> {
  const code = await codeFor(gw, { client_id: 'offline-app', scope });
  const res = await redeem(gw.app, { code, redirect_uri: CALLBACK }, OFFLINE_AUTH);
  if (res.status !== 200) throw new Error(`redeem answered ${res.status}: ${res.text}`);
  return res.body as Record<string, string>;
}

/** A CIBA request of offline-app for `scope`, polled once approved: the token response. */
async function viaCiba(gw: TestGateway, scope: string): Promise<Record<string, string>> {
  const id = await startBackchannel(gw.app, ALICE, scope, OFFLINE_AUTH);
  const res = await pollToken(gw.app, id, OFFLINE_AUTH);
  if (res.status !== 200) throw new Error(`poll answered ${res.status}: ${res.text}`);
  return res.body as Record<string, string>;
}

/** A memory store that keeps a copy of everything written to it. */
class RecordingStore extends MemoryStore {
  readonly written: string[] = [];

  override async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    this.written.push(JSON.stringify([kind, id, value]));
    return super.put(kind, id, value, options);
  }

  override async consume(kind: RecordKind, id: string, writes: readonly RecordWrite[] = []): Promise<boolean> {
    this.written.push(JSON.stringify([kind, id, writes]));
    return super.consume(kind, id, writes);
  }
}

describe.each(['opaque', 'jwt'] as const)('refresh_token grant (%s access tokens)', (format) => {
  const gateway = (overrides = {}) => createGrantsGateway({ accessTokenFormat: format, ...overrides });

  it('the code grant with offline_access issues a refresh token: 256 random bits, stored only as a hash', async () => {
    const store = new RecordingStore();
    const gw = gateway({ store });
    const tokens = await viaCode(gw);
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(tokens.scope).toBe(OFFLINE);
    // `<8-character placement tag>.<43 characters>`: 32 random bytes after the grant's tag.
    expect(tokens.refresh_token).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    expect(store.written.some((w) => w.includes(tokens.refresh_token!))).toBe(false);
    expect(store.written.some((w) => w.includes(tokens.access_token!))).toBe(false);
  });

  it('a DPoP-bound grant refreshed without a proof: 400 invalid_dpop_proof, never Bearer; with one, DPoP', async () => {
    const gw = gateway();
    const key = await proofKey();
    const iat = Math.floor(gw.clock.now / 1000);
    const proof = () => handProof({ key, htm: 'POST', htu: `${ISSUER}/token`, iat });
    const id = await startBackchannel(gw.app, ALICE, OFFLINE, OFFLINE_AUTH);
    const poll = await pollToken(gw.app, id, OFFLINE_AUTH).set('DPoP', await proof());
    expect(poll.body.token_type).toBe('DPoP');
    const bare = await refresh(gw.app, poll.body.refresh_token as string);
    expect(bare.status).toBe(400);
    expect(bare.body.error).toBe('invalid_dpop_proof');
    // Nothing was used up: the same refresh token, now with a proof, gives a bound token.
    const proven = await refresh(gw.app, poll.body.refresh_token as string).set('DPoP', await proof());
    expect(proven.status).toBe(200);
    expect(proven.body.token_type).toBe('DPoP');
  });

  it('refreshing gives a new access token and a new refresh token (rotation); both access tokens work', async () => {
    const gw = gateway();
    const first = await viaCode(gw);
    const res = await refresh(gw.app, first.refresh_token!);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: OFFLINE });
    expect(res.body.refresh_token).not.toBe(first.refresh_token);
    expect(res.body.access_token).not.toBe(first.access_token);
    expect((await callService(gw.app, res.body.access_token as string)).status).toBe(200);
    expect((await callService(gw.app, first.access_token!)).status).toBe(200);
    // The new refresh token works in turn.
    expect((await refresh(gw.app, res.body.refresh_token as string)).status).toBe(200);
  });

  it('a reused (rotated-out) refresh token: invalid_grant, and every token of its grant then gets 401 at the guard', async () => {
    const gw = gateway();
    const events = recordEvents(gw.netauth);
    const first = await viaCode(gw);
    const second = (await refresh(gw.app, first.refresh_token!)).body as Record<string, string>;
    expect(events.of('token.issued').map((e) => [e.grantType, e.refreshToken])).toEqual([
      ['authorization_code', true],
      ['refresh_token', true],
    ]);
    // Past lifetimes.redemptionRetry (30 s), where the same client's retry no longer gets the same answer.
    gw.clock.advance(31);
    const reuse = await refresh(gw.app, first.refresh_token!);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
    expect(events.of('token.revoked')).toEqual([
      {
        clientId: 'offline-app',
        subscriberId: 'sub-alice',
        purpose: 'FraudPreventionAndDetection',
        reason: 'refresh_token_reuse',
      },
    ]);
    for (const token of [first.access_token!, second.access_token!]) {
      const api = await callService(gw.app, token);
      expect(api.status).toBe(401);
      expect(api.headers['www-authenticate']).toContain('error="invalid_token"');
    }
    expect((await refresh(gw.app, second.refresh_token!)).body.error).toBe('invalid_grant');
  });

  it('50 parallel refreshes of one token by its client: one new pair of tokens, the same in every answer', async () => {
    const gw = gateway({ rateLimits: false });
    const first = await viaCode(gw);
    const answers = await Promise.all(Array.from({ length: 50 }, () => refresh(gw.app, first.refresh_token!)));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(new Set(answers.map((r) => r.body.access_token)).size).toBe(1);
    expect(new Set(answers.map((r) => r.body.refresh_token)).size).toBe(1);
    // Retries of one refresh (lifetimes.redemptionRetry), not reuses: the new tokens live.
    expect((await callService(gw.app, answers[0]!.body.access_token as string)).status).toBe(200);
    expect((await refresh(gw.app, answers[0]!.body.refresh_token as string)).status).toBe(200);
  });

  it('a reuse after lifetimes.redemptionRetry revokes the grant, as two parties holding the token', async () => {
    const gw = gateway({ rateLimits: false });
    const first = await viaCode(gw);
    const ok = await refresh(gw.app, first.refresh_token!);
    gw.clock.advance(31);
    expect((await refresh(gw.app, first.refresh_token!)).body.error).toBe('invalid_grant');
    // RFC 9700 §4.14.2 revokes the grant, the first refresh's tokens included.
    expect((await callService(gw.app, ok.body.access_token as string)).status).toBe(401);
    expect((await refresh(gw.app, ok.body.refresh_token as string)).body.error).toBe('invalid_grant');
  });

  it('after consent.revoke(): invalid_grant (CAMARA: no new token once consent is withdrawn)', async () => {
    const gw = gateway();
    await gw.netauth.consent.grant({ clientId: 'offline-app', login_hint: ALICE, scope: LOCATION });
    const tokens = await viaCiba(gw, `${LOCATION} offline_access`);
    expect(tokens.refresh_token).toBeDefined();
    expect(await gw.netauth.consent.revoke({ clientId: 'offline-app', login_hint: ALICE, scope: LOCATION })).toBe(true);
    const res = await refresh(gw.app, tokens.refresh_token!);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
    // Consent given again is a new consent: the old grant's refresh token stays dead.
    await gw.netauth.consent.grant({ clientId: 'offline-app', login_hint: ALICE, scope: LOCATION });
    expect((await refresh(gw.app, tokens.refresh_token!)).body.error).toBe('invalid_grant');
  });

  it('consent checked on every refresh: a consent that lapsed (its lifetime) is invalid_grant', async () => {
    const gw = gateway({
      consentPolicy: GRANTS_POLICY.map((rule) =>
        rule.scope === 'device-location' && rule.basis === 'consent' ? { ...rule, consentLifetime: 600 } : rule,
      ),
    });
    await gw.netauth.consent.grant({ clientId: 'offline-app', login_hint: ALICE, scope: LOCATION });
    const tokens = await viaCiba(gw, `${LOCATION} offline_access`);
    gw.clock.advance(300);
    const early = await refresh(gw.app, tokens.refresh_token!);
    expect(early.status).toBe(200);
    gw.clock.advance(400);
    expect((await refresh(gw.app, early.body.refresh_token as string)).body.error).toBe('invalid_grant');
  });

  it('scope narrows the access token, never widens it; a refused widening burns nothing', async () => {
    const gw = gateway();
    await gw.netauth.consent.grant({ clientId: 'offline-app', login_hint: ALICE, scope: LOCATION });
    const both = `dpv:FraudPreventionAndDetection sim-swap device-location offline_access`;
    const tokens = await viaCiba(gw, both);
    const wider = await refresh(gw.app, tokens.refresh_token!, {
      scope: 'dpv:FraudPreventionAndDetection sim-swap device-location number-verification',
    });
    expect(wider.status).toBe(400);
    expect(wider.body.error).toBe('invalid_scope');
    expect(
      (await refresh(gw.app, tokens.refresh_token!, { scope: 'dpv:RequestedServiceProvision sim-swap' })).body.error,
    ).toBe('invalid_scope');
    expect(
      (await refresh(gw.app, tokens.refresh_token!, { scope: 'openid dpv:FraudPreventionAndDetection sim-swap' })).body
        .error,
    ).toBe('invalid_scope');

    const narrow = await refresh(gw.app, tokens.refresh_token!, { scope: 'dpv:FraudPreventionAndDetection sim-swap' });
    expect(narrow.status).toBe(200);
    expect(narrow.body.scope).toBe('dpv:FraudPreventionAndDetection sim-swap');
    expect((await callService(gw.app, narrow.body.access_token as string)).status).toBe(200);
    expect(
      (
        await request(gw.app)
          .get('/location')
          .set('Authorization', `Bearer ${narrow.body.access_token as string}`)
      ).status,
    ).toBe(403);
    // The new refresh token keeps the whole grant.
    const again = await refresh(gw.app, narrow.body.refresh_token as string);
    expect(again.body.scope).toBe(both);
  });

  it("another client's refresh token is invalid_grant, like an unknown one, and is not burnt", async () => {
    const other: RegisteredClient = { ...OFFLINE_CLIENT, clientId: 'offline-2', clientSecret: 'secret-2' };
    const gw = gateway({ clients: [...GRANTS_CLIENTS, other] });
    const tokens = await viaCode(gw);
    const stolen = await refresh(gw.app, tokens.refresh_token!, {}, basic('offline-2', 'secret-2'));
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
    expect((await refresh(gw.app, 'Ab3dEf_1.unknown')).body.error).toBe('invalid_grant');
    expect((await refresh(gw.app, tokens.refresh_token!)).status).toBe(200);
  });

  it('expires after lifetimes.refreshToken (default 14 days), counted from each rotation', async () => {
    const gw = gateway({ lifetimes: { refreshToken: 3600 } });
    const tokens = await viaCode(gw);
    gw.clock.advance(3000);
    const rotated = await refresh(gw.app, tokens.refresh_token!);
    expect(rotated.status).toBe(200);
    gw.clock.advance(3000);
    const later = await refresh(gw.app, rotated.body.refresh_token as string);
    expect(later.status).toBe(200);
    gw.clock.advance(3601);
    expect((await refresh(gw.app, later.body.refresh_token as string)).body.error).toBe('invalid_grant');

    const defaults = gateway();
    const t = await viaCode(defaults);
    defaults.clock.advance(14 * 24 * 3600 - 1);
    expect((await refresh(defaults.app, t.refresh_token!)).status).toBe(200);
    const t2 = await viaCode(defaults);
    defaults.clock.advance(14 * 24 * 3600);
    expect((await refresh(defaults.app, t2.refresh_token!)).body.error).toBe('invalid_grant');
  });

  it('a client no longer registered for the scope: invalid_grant (CAMARA: the client status changed)', async () => {
    let registration: RegisteredClient = { ...OFFLINE_CLIENT };
    // The portal's database: a fresh registration object on every lookup.
    const clients: ClientRegistry = {
      find: async (id) => (id === 'offline-app' ? { ...registration } : CLIENTS.find((c) => c.clientId === id)),
    };
    const gw = gateway({ clients });
    const tokens = await viaCode(gw);
    registration = { ...registration, scopes: [LOCATION] };
    expect((await refresh(gw.app, tokens.refresh_token!)).body.error).toBe('invalid_grant');
    registration = { ...registration, scopes: OFFLINE_CLIENT.scopes, grantTypes: ['authorization_code'] };
    expect((await refresh(gw.app, tokens.refresh_token!)).body.error).toBe('unauthorized_client');
  });

  it('no refresh token without offline_access, or for a client not registered for refresh_token (offline_access is not granted then)', async () => {
    const gw = gateway();
    expect(await viaCode(gw, SIM_SWAP)).not.toHaveProperty('refresh_token');
    const code = await codeFor(gw, { scope: OFFLINE });
    const res = await redeem(gw.app, { code, redirect_uri: CALLBACK });
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('refresh_token');
    expect(res.body.scope).toBe(SIM_SWAP);
    const notRegistered = await tokenRequest(
      gw.app,
      { grant_type: 'refresh_token', refresh_token: 'x' },
      basic('app-1', CLIENTS[0]!.clientSecret!),
    );
    expect(notRegistered.body.error).toBe('unauthorized_client');
  });

  it('CIBA with offline_access issues one too, and the refresh_token parameter is required', async () => {
    const gw = gateway();
    const tokens = await viaCiba(gw, `dpv:FraudPreventionAndDetection sim-swap offline_access`);
    expect(tokens.refresh_token).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    const missing = await tokenRequest(gw.app, { grant_type: 'refresh_token' }, OFFLINE_AUTH);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
  });
});

describe('refresh tokens at introspection and revocation (RFC 7662, RFC 7009)', () => {
  const introspect = (gw: TestGateway, body: Record<string, string>) =>
    request(gw.app).post('/apigateway/introspect').set('Authorization', OFFLINE_AUTH).type('form').send(body);
  const revoke = (gw: TestGateway, body: Record<string, string>) =>
    request(gw.app).post('/apigateway/revoke').set('Authorization', OFFLINE_AUTH).type('form').send(body);

  it('introspection reports a live refresh token (no token_type), whatever the hint; a rotated-out one is inactive', async () => {
    const gw = createGrantsGateway();
    const tokens = await viaCode(gw);
    for (const hint of [undefined, 'refresh_token', 'access_token']) {
      const res = await introspect(gw, { token: tokens.refresh_token!, ...(hint ? { token_type_hint: hint } : {}) });
      expect(res.body).toEqual({
        active: true,
        scope: OFFLINE,
        client_id: 'offline-app',
        exp: Math.floor(gw.clock.now / 1000) + 14 * 24 * 3600,
        iat: Math.floor(gw.clock.now / 1000),
        sub: expect.any(String),
        iss: 'http://gateway.test/apigateway',
        purpose: 'FraudPreventionAndDetection',
        identified_by: 'network',
        amr: ['hwk'],
      });
    }
    expect(
      (await introspect(gw, { token: tokens.access_token!, token_type_hint: 'refresh_token' })).body,
    ).toMatchObject({ active: true, token_type: 'Bearer' });
    await refresh(gw.app, tokens.refresh_token!);
    expect((await introspect(gw, { token: tokens.refresh_token! })).body).toEqual({ active: false });
  });

  it('revoking a refresh token revokes its grant: its access tokens get 401, it and its successors are invalid_grant', async () => {
    const gw = createGrantsGateway();
    const tokens = await viaCode(gw);
    const rotated = (await refresh(gw.app, tokens.refresh_token!)).body as Record<string, string>;
    expect((await revoke(gw, { token: rotated.refresh_token!, token_type_hint: 'refresh_token' })).status).toBe(200);
    expect((await callService(gw.app, tokens.access_token!)).status).toBe(401);
    expect((await callService(gw.app, rotated.access_token!)).status).toBe(401);
    expect((await refresh(gw.app, rotated.refresh_token!)).body.error).toBe('invalid_grant');
    // Unknown or already revoked: 200 (RFC 7009 §2.2).
    expect((await revoke(gw, { token: rotated.refresh_token! })).status).toBe(200);
  });

  it("another client's refresh token is not revoked: 400 invalid_request", async () => {
    const gw = createGrantsGateway();
    const tokens = await viaCode(gw);
    const res = await request(gw.app)
      .post('/apigateway/revoke')
      .set('Authorization', basic('app-1', CLIENTS[0]!.clientSecret!))
      .type('form')
      .send({ token: tokens.refresh_token! });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect((await refresh(gw.app, tokens.refresh_token!)).status).toBe(200);
  });

  it('discovery lists refresh_token and offline_access when a client is registered for it', async () => {
    const gw = createGrantsGateway();
    const metadata = (await request(gw.app).get('/apigateway/.well-known/openid-configuration')).body as Record<
      string,
      string[]
    >;
    expect(metadata.grant_types_supported).toEqual([
      'authorization_code',
      CIBA,
      'refresh_token',
      'client_credentials',
      'urn:ietf:params:oauth:grant-type:jwt-bearer',
    ]);
    expect(metadata.scopes_supported).toContain('offline_access');
  });
});

describe('interop: openid-client v6 refreshTokenGrant', () => {
  let gw: TestGateway;
  let close: () => Promise<void>;
  let config: client.Configuration;

  beforeAll(async () => {
    // The gateway under its own listening URL (the issuer must be where openid-client finds it).
    const host = express();
    const listening = await listen(host);
    gw = createGrantsGateway({ issuer: `${listening.url}/apigateway`, now: Date.now });
    host.use(gw.app);
    close = listening.close;
    config = await client.discovery(
      new URL(`${listening.url}/apigateway`),
      'offline-app',
      undefined,
      client.ClientSecretBasic('offline-secret'),
      {
        execute: [client.allowInsecureRequests],
      },
    );
  });
  afterAll(() => close());

  it('refreshes with rotation, and a reuse is refused with invalid_grant', async () => {
    const started = await client.initiateBackchannelAuthentication(config, { login_hint: ALICE, scope: OFFLINE });
    const first = await client.pollBackchannelAuthenticationGrant(config, { ...started, interval: 0 });
    expect(first.refresh_token).toBeDefined();
    const second = await client.refreshTokenGrant(config, first.refresh_token!);
    expect(second.refresh_token).toBeDefined();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.expires_in).toBe(3600);
    expect(second.scope).toBe(OFFLINE);
    const narrowed = await client.refreshTokenGrant(config, second.refresh_token!, { scope: SIM_SWAP });
    expect(narrowed.scope).toBe(SIM_SWAP);
    const reuse = await client.refreshTokenGrant(config, first.refresh_token!).catch((e: unknown) => e);
    expect(reuse).toBeInstanceOf(client.ResponseBodyError);
    expect((reuse as client.ResponseBodyError).error).toBe('invalid_grant');
    expect(
      (
        await fetch(new URL('/sim-swap/check', config.serverMetadata().issuer), {
          method: 'POST',
          headers: { authorization: `Bearer ${narrowed.access_token}` },
        })
      ).status,
    ).toBe(401);
  });
});
