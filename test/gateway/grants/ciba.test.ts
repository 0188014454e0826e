import { describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { createTestGateway, basic, APP1, APP2, CIBA, SIM_SWAP, LOCATION } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import type { BackchannelRequest } from '../../../lib/index.js';

const ALICE = 'tel:+34600000001';

describe('token endpoint, CIBA grant', () => {
  it('issues a Bearer token with expires_in 3600 and the granted scope, not cacheable', async () => {
    const { app } = createTestGateway();
    const res = await pollToken(app, await startBackchannel(app, ALICE, SIM_SWAP));
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
    expect(res.body.token_type).toBe('Bearer');
    expect(res.body.expires_in).toBe(3600);
    expect(res.body.scope).toBe(SIM_SWAP);
    // 256 random bits in base64url.
    expect(res.body.access_token).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
  });

  it('consent needed: authorization_pending until consent is granted out-of-band, then a token', async () => {
    const { app, netauth, clock } = createTestGateway();
    const id = await startBackchannel(app, ALICE, LOCATION);
    const first = await pollToken(app, id);
    expect(first.status).toBe(400);
    expect(first.body.error).toBe('authorization_pending');
    expect(first.headers['cache-control']).toBe('no-store');
    clock.advance(2);
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    clock.advance(2);
    const token = await pollToken(app, id);
    expect(token.status).toBe(200);
    const api = await request(app).get('/location').set('Authorization', `Bearer ${token.body.access_token}`);
    expect(api.status).toBe(200);
    expect(api.body.subscriber).toBe('sub-alice');
  });

  it('consent already on record: the first poll returns the token', async () => {
    const { app, netauth } = createTestGateway();
    await netauth.consent.grant({ clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION });
    expect((await pollToken(app, await startBackchannel(app, ALICE, LOCATION))).status).toBe(200);
  });

  it('consent of another client, purpose or subscriber does not count', async () => {
    const { app, netauth } = createTestGateway();
    await netauth.consent.grant({ clientId: 'app-2', login_hint: ALICE, scope: LOCATION });
    await netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000002', scope: LOCATION });
    expect((await pollToken(app, await startBackchannel(app, ALICE, LOCATION))).body.error).toBe(
      'authorization_pending',
    );
  });

  it('refused: access_denied (400)', async () => {
    const { app, netauth } = createTestGateway();
    const id = await startBackchannel(app, ALICE, LOCATION);
    await netauth.consent.deny({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    const res = await pollToken(app, id);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('access_denied');
  });

  it('a refusal older than the request leaves it pending (the subscriber is asked again)', async () => {
    const { app, netauth, clock } = createTestGateway();
    await netauth.consent.deny({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    clock.advance(1);
    const id = await startBackchannel(app, ALICE, LOCATION);
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
  });

  it('expired: expired_token, also for a request that would now be approved', async () => {
    const { app, netauth, clock } = createTestGateway();
    const id = await startBackchannel(app, ALICE, LOCATION);
    clock.advance(121);
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    const res = await pollToken(app, id);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('expired_token');
  });

  it('polled sooner than interval after the previous poll: slow_down, and the interval grows by 5 s', async () => {
    const { app, clock } = createTestGateway();
    const id = await startBackchannel(app, ALICE, LOCATION);
    // Measured from the previous poll, not from issuance: the first poll is never too soon.
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
    clock.advance(1);
    const early = await pollToken(app, id);
    expect(early.status).toBe(400);
    expect(early.body.error).toBe('slow_down');
    // The interval is now 7 s: 2 s later is still too soon, 7 s later is fine.
    clock.advance(2);
    expect((await pollToken(app, id)).body.error).toBe('slow_down');
    clock.advance(12);
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
    clock.advance(12);
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
  });

  it('the interval is per request: another request is not slowed', async () => {
    const { app, clock } = createTestGateway();
    const a = await startBackchannel(app, ALICE, LOCATION);
    const b = await startBackchannel(app, ALICE, LOCATION);
    await pollToken(app, a);
    clock.advance(0.5);
    expect((await pollToken(app, a)).body.error).toBe('slow_down');
    expect((await pollToken(app, b)).body.error).toBe('authorization_pending');
  });

  it('after success the auth_req_id is consumed: invalid_grant', async () => {
    const { app, clock } = createTestGateway();
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    const first = await pollToken(app, id);
    expect(first.status).toBe(200);
    // Within lifetimes.redemptionRetry (30 s) the same client's retry gets the same answer; another's does not.
    clock.advance(5);
    expect((await pollToken(app, id)).body.access_token).toBe(first.body.access_token);
    expect((await pollToken(app, id, APP2)).body.error).toBe('invalid_grant');
    clock.advance(26);
    const reuse = await pollToken(app, id);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
  });

  it("another client's auth_req_id: invalid_grant, and the owner's request is untouched", async () => {
    const { app } = createTestGateway();
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    const stolen = await pollToken(app, id, APP2);
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
    expect((await pollToken(app, id, APP1)).status).toBe(200);
  });

  it('an unknown auth_req_id: invalid_grant; a missing one: invalid_request', async () => {
    const { app } = createTestGateway();
    expect((await pollToken(app, 'no-such-request')).body.error).toBe('invalid_grant');
    const missing = await request(app)
      .post('/apigateway/token')
      .set('Authorization', APP1)
      .type('form')
      .send({ grant_type: CIBA });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
  });

  it('50 parallel token requests for one approved auth_req_id: exactly one token, in every 200', async () => {
    const { app } = createTestGateway();
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    const results = await Promise.all(Array.from({ length: 50 }, () => pollToken(app, id)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((r) => r.body.access_token)).size).toBe(1);
    for (const r of results.filter((r) => r.status !== 200)) {
      expect(r.status).toBe(400);
      expect(['invalid_grant', 'slow_down']).toContain(r.body.error);
    }
  });

  it('grant_type: missing → invalid_request, unknown → unsupported_grant_type, not registered → unauthorized_client', async () => {
    const { app } = createTestGateway();
    const send = (body: Record<string, string>, auth = APP1) =>
      request(app).post('/apigateway/token').set('Authorization', auth).type('form').send(body);
    expect((await send({ auth_req_id: 'x' })).body.error).toBe('invalid_request');
    expect((await send({ grant_type: 'password', username: 'a', password: 'b' })).body.error).toBe(
      'unsupported_grant_type',
    );
    expect((await send({ grant_type: 'urn:ietf:params:oauth:grant-type:saml2-bearer' })).body.error).toBe(
      'unsupported_grant_type',
    );
    // A grant this gateway has, but the client is not registered for.
    expect(
      (await send({ grant_type: 'client_credentials', scope: 'dpv:FraudPreventionAndDetection sim-swap' })).body.error,
    ).toBe('unauthorized_client');
    const notRegistered = await send({ grant_type: CIBA, auth_req_id: 'x' }, basic('code-only', 'code-secret'));
    expect(notRegistered.status).toBe(400);
    expect(notRegistered.body.error).toBe('unauthorized_client');
  });

  it('revoking consent revokes the tokens issued under it', async () => {
    const { app, netauth } = createTestGateway();
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    const id = await startBackchannel(app, ALICE, LOCATION);
    const token = (await pollToken(app, id)).body.access_token as string;
    expect((await request(app).get('/location').set('Authorization', `Bearer ${token}`)).status).toBe(200);
    // Renewing the consent keeps its grant, so the revocation still reaches this token.
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    expect(await netauth.consent.revoke({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION })).toBe(true);
    const after = await request(app).get('/location').set('Authorization', `Bearer ${token}`);
    expect(after.status).toBe(401);
    expect(after.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(await netauth.consent.lookup({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION })).toEqual([]);
    // Within lifetimes.redemptionRetry, a retry of the poll does not hand the revoked token out again.
    expect((await pollToken(app, id)).body.error).toBe('invalid_grant');
  });
});

describe('backchannel hooks', () => {
  it('an approval hook keeps the request pending until it decides', async () => {
    let decide: (d: 'approve' | 'deny') => void = () => undefined;
    const seen: BackchannelRequest[] = [];
    const { app, clock } = createTestGateway({
      backchannel: {
        authorize: (req) => {
          seen.push(req);
          return new Promise((resolve) => (decide = resolve));
        },
      },
    });
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]).toMatchObject({
      auth_req_id: id,
      clientId: 'app-1',
      clientName: 'Fraud Checker',
      purpose: 'FraudPreventionAndDetection',
      scopes: ['sim-swap'],
      // How the client named the subscriber: what the hook vouches for when it authenticates them.
      identifiedBy: 'tel',
    });
    expect(seen[0]!.subscriber).toEqual({ id: 'sub-alice', phoneNumber: '+34600000001' });
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
    decide('approve');
    clock.advance(2);
    await vi.waitFor(async () => expect((await pollToken(app, id)).status).toBe(200));
  });

  it('a hook that denies: access_denied; the operator API can decide instead', async () => {
    const { app, netauth } = createTestGateway({ backchannel: { authorize: () => new Promise(() => undefined) } });
    const denied = await startBackchannel(app, ALICE, SIM_SWAP);
    expect(await netauth.backchannel.deny(denied)).toBe(true);
    expect((await pollToken(app, denied)).body.error).toBe('access_denied');
    const approved = await startBackchannel(app, ALICE, SIM_SWAP);
    expect(await netauth.backchannel.approve(approved)).toBe(true);
    expect(await netauth.backchannel.approve(approved)).toBe(false);
    expect((await pollToken(app, approved)).status).toBe(200);
    expect(await netauth.backchannel.approve('unknown')).toBe(false);
  });

  it('an approved request still needs consent where the policy asks for it', async () => {
    const { app, netauth } = createTestGateway({ backchannel: { authorize: async () => 'approve' } });
    const id = await startBackchannel(app, ALICE, LOCATION);
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    await vi.waitFor(async () => expect((await pollToken(app, id)).status).toBe(200));
  });

  it('onConsentRequired is told when consent is needed and not on record, and only then', async () => {
    const told: BackchannelRequest[] = [];
    const { app, netauth } = createTestGateway({ backchannel: { onConsentRequired: (req) => void told.push(req) } });
    const id = await startBackchannel(app, ALICE, LOCATION);
    await vi.waitFor(() => expect(told.map((r) => r.auth_req_id)).toEqual([id]));
    await startBackchannel(app, ALICE, SIM_SWAP);
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    await startBackchannel(app, ALICE, LOCATION);
    // Let any stray hook call land before looking.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(told).toHaveLength(1);
  });

  it('a hook that throws does not break the endpoint', async () => {
    const errors: unknown[] = [];
    const { app } = createTestGateway({
      onError: (e) => errors.push(e),
      backchannel: { authorize: async () => Promise.reject(new Error('hook failed')) },
    });
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    await vi.waitFor(() => expect(errors).toHaveLength(1));
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
  });
});
