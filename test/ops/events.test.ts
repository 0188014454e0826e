import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { APP1, CIBA, LOCATION, SIM_SWAP, basic, createTestGateway } from '../helpers/gateway.js';
import { pollToken, startBackchannel, bcAuthorize } from '../helpers/requests.js';
import { answerConsent, authorize, callback, codeFor, pkcePair, redeem, CALLBACK } from '../helpers/frontend.js';
import { recordEvents } from '../helpers/events.js';
import { EVENT_NAMES, type NetAuthEventListener } from '../../lib/index.js';

const ALICE = 'tel:+34600000001';
const alice = { clientId: 'app-1', subscriberId: 'sub-alice', purpose: 'FraudPreventionAndDetection' };

describe('events: frontend flow', () => {
  it('a request without consent: authorization.requested, code.issued; redemption: code.consumed, token.issued', async () => {
    const gw = createTestGateway();
    const events = recordEvents(gw.netauth);
    const { verifier, challenge } = pkcePair();
    const code = await codeFor(gw, { code_challenge: challenge, code_challenge_method: 'S256' });
    expect(events.names()).toEqual(['authorization.requested', 'code.issued']);
    expect(events.of('authorization.requested')).toEqual([
      { ...alice, scopes: ['sim-swap'], identifiedBy: 'network', consentPage: false },
    ]);
    expect(events.of('code.issued')).toEqual([{ ...alice, scopes: ['sim-swap'], identifiedBy: 'network', pkce: true }]);

    events.clear();
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK, code_verifier: verifier })).status).toBe(200);
    expect(events.names()).toEqual(['code.consumed', 'token.issued']);
    expect(events.of('code.consumed')).toEqual([{ ...alice, scopes: ['sim-swap'] }]);
    expect(events.of('token.issued')).toEqual([
      {
        ...alice,
        identifiedBy: 'network',
        scopes: ['sim-swap'],
        grantType: 'authorization_code',
        format: 'opaque',
        idToken: false,
        refreshToken: false,
        singleUse: false,
      },
    ]);
  });

  it('a replayed code: code.replayed and token.revoked (code_replay)', async () => {
    const gw = createTestGateway();
    const code = await codeFor(gw);
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).status).toBe(200);
    const events = recordEvents(gw.netauth);
    // Past lifetimes.redemptionRetry: no longer the client's retry of one redemption.
    gw.clock.advance(31);
    expect((await redeem(gw.app, { code, redirect_uri: CALLBACK })).body.error).toBe('invalid_grant');
    expect(events.names()).toEqual(['code.replayed', 'token.revoked']);
    expect(events.of('code.replayed')).toEqual([{ ...alice, scopes: ['sim-swap'] }]);
    expect(events.of('token.revoked')).toEqual([
      { clientId: 'app-1', subscriberId: 'sub-alice', purpose: alice.purpose, reason: 'code_replay' },
    ]);
  });

  it('the consent page: authorization.requested (consentPage), then consent.granted or consent.denied via the page', async () => {
    const gw = createTestGateway();
    const events = recordEvents(gw.netauth);
    const allowed = await answerConsent(gw, await authorize(gw.app, { scope: LOCATION }), 'allow');
    expect(callback(allowed).code).toBeDefined();
    expect(events.names()).toEqual(['authorization.requested', 'consent.granted', 'code.issued']);
    expect(events.of('authorization.requested')[0]).toEqual({
      ...alice,
      scopes: ['device-location'],
      identifiedBy: 'network',
      consentPage: true,
    });
    expect(events.of('consent.granted')).toEqual([{ ...alice, scopes: ['device-location'], via: 'page' }]);

    events.clear();
    const other = createTestGateway();
    const otherEvents = recordEvents(other.netauth);
    const denied = await answerConsent(other, await authorize(other.app, { scope: LOCATION }), 'deny');
    expect(callback(denied).error).toBe('access_denied');
    expect(otherEvents.names()).toEqual(['authorization.requested', 'consent.denied']);
    expect(otherEvents.of('consent.denied')).toEqual([{ ...alice, scopes: ['device-location'], via: 'page' }]);
  });

  it('prompt=none with consent needed: authorization.requested without the page', async () => {
    const gw = createTestGateway();
    const events = recordEvents(gw.netauth);
    expect(callback(await authorize(gw.app, { scope: LOCATION, prompt: 'none' })).error).toBe('consent_required');
    expect(events.of('authorization.requested')).toEqual([
      { ...alice, scopes: ['device-location'], identifiedBy: 'network', consentPage: false },
    ]);
  });
});

describe('events: CIBA', () => {
  it('requested, slow_down (interval), consent granted out-of-band, approved and token.issued', async () => {
    const { app, netauth, clock } = createTestGateway();
    const events = recordEvents(netauth);
    const id = await startBackchannel(app, ALICE, LOCATION);
    expect(events.of('ciba.requested')).toEqual([{ ...alice, scopes: ['device-location'], identifiedBy: 'tel' }]);
    expect((await pollToken(app, id)).body.error).toBe('authorization_pending');
    expect((await pollToken(app, id)).body.error).toBe('slow_down');
    expect(events.of('ciba.slow_down')).toEqual([{ clientId: 'app-1', subscriberId: 'sub-alice', reason: 'interval' }]);
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    expect(events.of('consent.granted')).toEqual([{ ...alice, scopes: ['device-location'], via: 'api' }]);
    clock.advance(10);
    expect((await pollToken(app, id)).status).toBe(200);
    expect(events.names()).toEqual([
      'ciba.requested',
      'ciba.slow_down',
      'consent.granted',
      'ciba.approved',
      'token.issued',
    ]);
    expect(events.of('ciba.approved')).toEqual([{ ...alice, scopes: ['device-location'] }]);
    expect(events.of('token.issued')).toEqual([
      {
        ...alice,
        identifiedBy: 'tel',
        scopes: ['device-location'],
        grantType: CIBA,
        format: 'opaque',
        idToken: false,
        refreshToken: false,
        singleUse: false,
      },
    ]);
  });

  it('denied by consent (out-of-band API) and by decision (hook), expired', async () => {
    const { app, netauth, clock } = createTestGateway();
    const events = recordEvents(netauth);
    const refused = await startBackchannel(app, ALICE, LOCATION);
    await netauth.consent.deny({ clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION });
    expect((await pollToken(app, refused)).body.error).toBe('access_denied');
    expect(events.of('consent.denied')).toEqual([{ ...alice, scopes: ['device-location'], via: 'api' }]);
    expect(events.of('ciba.denied')).toEqual([{ ...alice, scopes: ['device-location'], reason: 'consent' }]);

    const late = await startBackchannel(app, 'tel:+34600000002', SIM_SWAP);
    clock.advance(121);
    expect((await pollToken(app, late)).body.error).toBe('expired_token');
    expect(events.of('ciba.expired')).toEqual([
      { clientId: 'app-1', subscriberId: 'sub-bob', purpose: alice.purpose, scopes: ['sim-swap'] },
    ]);

    const hooked = createTestGateway({ backchannel: { authorize: async () => 'deny' } });
    const hookEvents = recordEvents(hooked.netauth);
    const id = await startBackchannel(hooked.app, ALICE, SIM_SWAP);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await pollToken(hooked.app, id)).body.error).toBe('access_denied');
    expect(hookEvents.of('ciba.denied')).toEqual([{ ...alice, scopes: ['sim-swap'], reason: 'decision' }]);
  });
});

describe('events: revocation and consent withdrawal', () => {
  it('RFC 7009 revocation: token.revoked (revocation_request); consent revoked: consent.revoked and token.revoked (consent_withdrawn)', async () => {
    const { app, netauth } = createTestGateway();
    const events = recordEvents(netauth);
    const token = (await pollToken(app, await startBackchannel(app, ALICE, SIM_SWAP))).body.access_token as string;
    events.clear();
    expect(
      (await request(app).post('/apigateway/revoke').set('Authorization', APP1).type('form').send({ token })).status,
    ).toBe(200);
    expect(events.of('token.revoked')).toEqual([
      { clientId: 'app-1', subscriberId: 'sub-alice', purpose: alice.purpose, reason: 'revocation_request' },
    ]);
    // An unknown token: nothing revoked, no event.
    events.clear();
    await request(app).post('/apigateway/revoke').set('Authorization', APP1).type('form').send({ token: 'nothing' });
    expect(events.names()).toEqual([]);

    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    expect((await pollToken(app, await startBackchannel(app, ALICE, LOCATION))).status).toBe(200);
    events.clear();
    expect(await netauth.consent.revoke({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION })).toBe(true);
    expect(events.names()).toEqual(['token.revoked', 'consent.revoked']);
    expect(events.of('token.revoked')).toEqual([
      { clientId: 'app-1', subscriberId: 'sub-alice', purpose: alice.purpose, reason: 'consent_withdrawn' },
    ]);
    expect(events.of('consent.revoked')).toEqual([{ ...alice, scopes: ['device-location'], via: 'api' }]);
    // Nothing on record any more: no event.
    events.clear();
    expect(await netauth.consent.revoke({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION })).toBe(false);
    expect(events.names()).toEqual([]);
  });

  it('a refusal superseding a consent: token.revoked (consent_withdrawn)', async () => {
    const { netauth } = createTestGateway();
    await netauth.consent.grant({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    const events = recordEvents(netauth);
    await netauth.consent.deny({ clientId: 'app-1', login_hint: ALICE, scope: LOCATION });
    expect(events.names()).toEqual(['token.revoked', 'consent.denied']);
  });
});

describe('events: client authentication and requests', () => {
  it('client.authentication_failed with a reason; the client id only when it is registered', async () => {
    const { app, netauth } = createTestGateway();
    const events = recordEvents(netauth);
    const body = { login_hint: ALICE, scope: SIM_SWAP };
    await bcAuthorize(app, body, basic('app-1', 'wrong'));
    await bcAuthorize(app, body, basic('nobody', 'secret'));
    await request(app).post('/apigateway/bc-authorize').type('form').send(body);
    await bcAuthorize(app, body, 'Basic !!!');
    await bcAuthorize(app, { ...body, client_id: 'app-2' });
    await request(app)
      .post('/apigateway/token')
      .set('Authorization', basic('app-2', 'nope'))
      .type('form')
      .send({ grant_type: CIBA, auth_req_id: 'x' });
    await request(app)
      .post('/apigateway/introspect')
      .type('form')
      .send({ token: 'x', client_assertion: 'y', client_assertion_type: 'z' });
    // supertest connects from loopback: one network, one source.
    const source = expect.stringMatching(/^ipv[46]:[A-Za-z0-9_-]{16}$/);
    expect(events.of('client.authentication_failed')).toEqual([
      { endpoint: 'bc-authorize', clientId: 'app-1', reason: 'invalid_credentials', source },
      { endpoint: 'bc-authorize', reason: 'invalid_credentials', source },
      { endpoint: 'bc-authorize', reason: 'missing', source },
      { endpoint: 'bc-authorize', reason: 'malformed', source },
      { endpoint: 'bc-authorize', clientId: 'app-1', reason: 'client_id_mismatch', source },
      { endpoint: 'token', clientId: 'app-2', reason: 'invalid_credentials', source },
      { endpoint: 'introspect', reason: 'malformed', source },
    ]);
    expect(new Set(events.of('client.authentication_failed').map((e) => e.source)).size).toBe(1);
  });

  it('client.authentication_failed: the source network as a keyed hash (/24, /48), never the address', async () => {
    // Issue 32, item 10: failures of one client from many networks can be watched without logging addresses.
    const sources = async (pairwiseSalt: string, addresses: string[]) => {
      const { app, netauth } = createTestGateway({ pairwiseSalt });
      const events = recordEvents(netauth);
      for (const ip of addresses)
        await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP }, basic('app-1', 'wrong')).set(
          'X-Forwarded-For',
          ip,
        );
      const failed = events.of('client.authentication_failed');
      for (const ip of addresses) expect(JSON.stringify(failed)).not.toContain(ip);
      return failed.map((e) => e.source);
    };
    const addresses = [
      '203.0.113.7',
      '203.0.113.200',
      '203.0.114.7',
      '2001:db8:1:ff::1',
      '2001:db8:1:1::2',
      '2001:db8:2::1',
    ];
    const [a1, a2, b, v6a1, v6a2, v6b] = await sources('salt-one', addresses);
    expect(a1).toMatch(/^ipv4:[A-Za-z0-9_-]{16}$/);
    expect(v6a1).toMatch(/^ipv6:[A-Za-z0-9_-]{16}$/);
    // One /24 (one /48) is one source; another is another.
    expect(a2).toBe(a1);
    expect(b).not.toBe(a1);
    expect(v6a2).toBe(v6a1);
    expect(v6b).not.toBe(v6a1);
    // Instances with one pairwiseSalt agree; another salt gives unrelated labels.
    expect(await sources('salt-one', addresses)).toEqual([a1, a2, b, v6a1, v6a2, v6b]);
    const other = await sources('salt-two', addresses);
    expect(other[0]).not.toBe(a1);
    expect(other[3]).not.toBe(v6a1);
  });

  it('request.completed: endpoint, method, status, outcome (ok or the error code), grant type, duration', async () => {
    const { app, netauth, clock } = createTestGateway();
    const events = recordEvents(netauth);
    const id = await startBackchannel(app, ALICE, SIM_SWAP);
    await pollToken(app, id);
    clock.advance(31);
    await pollToken(app, id);
    await request(app).get('/apigateway/token');
    await request(app).get(`/apigateway/authorize?client_id=nobody`);
    await authorize(app, { scope: 'dpv:Nothing#none' });
    await request(app).get('/apigateway/.well-known/openid-configuration');
    await events.settle();
    const completed = events.of('request.completed');
    expect(completed.map(({ durationMs, ...rest }) => rest)).toEqual([
      { endpoint: 'bc-authorize', method: 'POST', status: 200, outcome: 'ok' },
      { endpoint: 'token', method: 'POST', status: 200, outcome: 'ok', grantType: CIBA },
      { endpoint: 'token', method: 'POST', status: 400, outcome: 'invalid_grant', grantType: CIBA },
      { endpoint: 'token', method: 'GET', status: 405, outcome: 'invalid_request' },
      { endpoint: 'authorize', method: 'GET', status: 400, outcome: 'invalid_request' },
      { endpoint: 'authorize', method: 'GET', status: 302, outcome: 'invalid_scope' },
      { endpoint: 'discovery', method: 'GET', status: 200, outcome: 'ok' },
    ]);
    for (const e of completed) expect(e.durationMs).toBeGreaterThanOrEqual(0);
  });
});

describe('the emitter', () => {
  it('listener errors, thrown or rejected, never break a request; they go to onError', async () => {
    const reported: unknown[] = [];
    const { app, netauth } = createTestGateway({ onError: (error) => reported.push(error) });
    netauth.events.on('ciba.requested', () => {
      throw new Error('listener broke');
    });
    // biome-ignore lint/nursery/noMisusedPromises: an application may pass an async listener; its rejection must reach onError
    netauth.events.on('ciba.requested', async () => {
      throw new Error('async listener broke');
    });
    const seen: string[] = [];
    netauth.events.on('ciba.requested', (e) => void seen.push(e.clientId));
    const res = await bcAuthorize(app, { login_hint: ALICE, scope: SIM_SWAP });
    expect(res.status).toBe(200);
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['app-1']);
    expect(reported.map((e) => (e as Error).message).sort()).toEqual(['async listener broke', 'listener broke']);
  });

  it('off() removes a listener; unknown event names are refused', async () => {
    const { app, netauth } = createTestGateway();
    const seen: string[] = [];
    const listener: NetAuthEventListener<'ciba.requested'> = (e) => void seen.push(e.subscriberId);
    netauth.events.on('ciba.requested', listener);
    await startBackchannel(app, ALICE, SIM_SWAP);
    netauth.events.off('ciba.requested', listener);
    await startBackchannel(app, ALICE, SIM_SWAP);
    expect(seen).toEqual(['sub-alice']);
    expect(() => netauth.events.on('nope' as 'ciba.requested', listener)).toThrow(TypeError);
    expect(EVENT_NAMES).toContain('rate.limited');
  });

  it('no payload carries a secret, token, code, auth_req_id, phone number or login_hint', async () => {
    const gw = createTestGateway();
    const events = recordEvents(gw.netauth);
    const code = await codeFor(gw);
    const token = (await redeem(gw.app, { code, redirect_uri: CALLBACK })).body.access_token as string;
    await redeem(gw.app, { code, redirect_uri: CALLBACK });
    const id = await startBackchannel(gw.app, ALICE, SIM_SWAP);
    const ciba = (await pollToken(gw.app, id)).body.access_token as string;
    await events.settle();
    const text = JSON.stringify(events.all);
    expect(events.all.length).toBeGreaterThan(8);
    for (const secret of [code, token, id, ciba, '+34600000001', '34600000001', ALICE, 'very-secret'])
      expect(text).not.toContain(secret);
  });
});
