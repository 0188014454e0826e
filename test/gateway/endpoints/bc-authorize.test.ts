import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestGateway, basic, APP2, SIM_SWAP, LOCATION } from '../../helpers/gateway.js';
import { bcAuthorize, pollToken, startBackchannel } from '../../helpers/requests.js';

describe('POST /bc-authorize', () => {
  const { app, netauth } = createTestGateway();

  it('answers 200 with an opaque auth_req_id, expires_in 120 and interval 2, not cacheable', async () => {
    const res = await bcAuthorize(app, { login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(Object.keys(res.body).sort()).toEqual(['auth_req_id', 'expires_in', 'interval']);
    expect(res.body.auth_req_id).toMatch(/^[A-Za-z0-9._-]{22,}$/);
    expect(res.body.expires_in).toBe(120);
    expect(res.body.interval).toBe(2);
    const again = await bcAuthorize(app, { login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(again.body.auth_req_id).not.toBe(res.body.auth_req_id);
  });

  it.each([
    ['ipport:10.20.0.1', 'sub-alice'],
    ['ipport:10.20.0.1:5000', 'sub-alice'],
    ['ipport:[2001:db8::1]', 'sub-alice'],
    ['ipport:[2001:db8:0:0::1]:443', 'sub-alice'],
    ['ipport:[::ffff:10.20.0.2]', 'sub-bob'],
    ['ipport:100.64.0.1:1500', 'sub-alice'],
    ['ipport:100.64.0.1:3000', 'sub-bob'],
    ['tel:+34600000002', 'sub-bob'],
  ])('%s identifies %s', async (loginHint, subscriber) => {
    const id = await startBackchannel(app, loginHint, SIM_SWAP);
    const token = await pollToken(app, id);
    expect(token.status).toBe(200);
    const api = await request(app).post('/sim-swap/check').set('Authorization', `Bearer ${token.body.access_token}`);
    expect(api.body.subscriber).toBe(subscriber);
  });

  it.each([
    ['tel:34600000001'],
    ['tel:+34 600 000 001'],
    ['ipport:2001:db8::1'],
    ['ipport:10.20.0.1:0'],
    ['ipport:10.20.0.1:70000'],
    ['ipport:999.1.1.1'],
    ['+34600000001'],
    // Ignored at /authorize (the network identifies the subscriber there); here the hint is the identification.
    ['alice@example.com'],
  ])('malformed login_hint %s: 400 invalid_request', async (loginHint) => {
    const res = await bcAuthorize(app, { login_hint: loginHint, scope: SIM_SWAP });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it.each([
    ['tel:+34699999999'],
    ['ipport:10.99.0.1'],
    ['ipport:100.64.0.1'],
    ['ipport:100.64.0.1:9000'],
    ['operatortoken:abc'],
    ['msisdn:34600000001'],
  ])('well formed but nobody behind %s: 400 unknown_user_id', async (loginHint) => {
    const res = await bcAuthorize(app, { login_hint: loginHint, scope: SIM_SWAP });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unknown_user_id');
  });

  it('login_hint and scope are required', async () => {
    for (const body of [{ scope: SIM_SWAP }, { login_hint: 'tel:+34600000001' }] as Record<string, string>[]) {
      const res = await bcAuthorize(app, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });

  it('login_hint_token or id_token_hint: invalid_request', async () => {
    for (const extra of [{ login_hint_token: 'x' }, { id_token_hint: 'y' }] as Record<string, string>[]) {
      const res = await bcAuthorize(app, { login_hint: 'tel:+34600000001', scope: SIM_SWAP, ...extra });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });

  it('ignores binding_message, user_code, requested_expiry, acr_values and client_notification_token', async () => {
    const res = await bcAuthorize(app, {
      login_hint: 'tel:+34600000001',
      scope: SIM_SWAP,
      binding_message: 'hello',
      user_code: '1234',
      requested_expiry: '30',
      acr_values: 'x',
      client_notification_token: 'tok',
    });
    expect(res.status).toBe(200);
    expect(res.body.expires_in).toBe(120);
  });

  it('accepts the CAMARA scope form with openid', async () => {
    const res = await bcAuthorize(app, {
      login_hint: 'tel:+34600000001',
      scope: 'openid dpv:FraudPreventionAndDetection sim-swap',
    });
    expect(res.status).toBe(200);
    const token = await pollToken(app, res.body.auth_req_id);
    expect(token.body.scope).toBe('openid dpv:FraudPreventionAndDetection sim-swap');
  });

  it.each([
    ['dpv:UnknownPurpose#sim-swap', 'unknown purpose'],
    ['dpv:FraudPreventionAndDetection#unknown-api', 'unknown scope'],
    ['dpv:FraudPreventionAndDetection#sim-swap dpv:RequestedServiceProvision#number-verification', 'two purposes'],
    ['dpv:FraudPreventionAndDetection', 'no API scope'],
  ])('%s (%s): 400 invalid_scope', async (scope) => {
    const res = await bcAuthorize(app, { login_hint: 'tel:+34600000001', scope });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
  });

  it.each<[string, Record<string, string>]>([
    ['scope phone', { scope: `phone ${SIM_SWAP}` }],
    ['scope profile', { scope: `profile ${SIM_SWAP}` }],
    ['scope email', { scope: `email ${SIM_SWAP}` }],
    ['scope address', { scope: `address ${SIM_SWAP}` }],
    ['the claims parameter', { scope: SIM_SWAP, claims: '{"id_token":{"phone_number":null}}' }],
  ])('OIDC claims without openid (%s): 400 invalid_request', async (_name, extra) => {
    const res = await bcAuthorize(app, { login_hint: 'tel:+34600000001', ...extra });
    expect(res.status).toBe(400);
    const description = expect.stringContaining('openid is missing');
    expect(res.body).toMatchObject({ error: 'invalid_request', error_description: description });
    // With openid, the claims parameter is accepted (and ignored: claims_parameter_supported is false).
    const openid = { login_hint: 'tel:+34600000001', scope: `openid ${SIM_SWAP}`, claims: '{}' };
    const claims = await bcAuthorize(app, openid);
    expect(claims.status).toBe(200);
  });

  it('a scope the client is not registered for: invalid_scope', async () => {
    const res = await bcAuthorize(app, { login_hint: 'tel:+34600000001', scope: LOCATION }, APP2);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
  });

  it('a client without the CIBA grant: 400 unauthorized_client', async () => {
    const res = await bcAuthorize(
      app,
      { login_hint: 'tel:+34600000001', scope: SIM_SWAP },
      basic('code-only', 'code-secret'),
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
  });

  it('a purpose and scope the policy forbids: 403 access_denied', async () => {
    const res = await bcAuthorize(app, { login_hint: 'tel:+34600000001', scope: 'dpv:Marketing#device-location' });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('access_denied');
  });

  it('does not reveal consent: the answer is the same whether or not consent is on record', async () => {
    const without = await bcAuthorize(app, { login_hint: 'tel:+34600000002', scope: LOCATION });
    await netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000002', scope: LOCATION });
    const withConsent = await bcAuthorize(app, { login_hint: 'tel:+34600000002', scope: LOCATION });
    expect(without.status).toBe(200);
    expect(withConsent.status).toBe(200);
    expect(Object.keys(without.body).sort()).toEqual(Object.keys(withConsent.body).sort());
    expect(without.body.expires_in).toBe(withConsent.body.expires_in);
    expect(without.body.interval).toBe(withConsent.body.interval);
  });
});

describe('POST /bc-authorize in sandbox mode', () => {
  const { app } = createTestGateway({ sandbox: { allowList: ['tel:+34600000001'] } });

  it('serves an allow-listed line', async () => {
    expect((await bcAuthorize(app, { login_hint: 'tel:+34600000001', scope: SIM_SWAP })).status).toBe(200);
  });

  it('refuses a line that is not allow-listed with 403 access_denied', async () => {
    for (const loginHint of ['tel:+34600000002', 'ipport:10.20.0.1']) {
      const res = await bcAuthorize(app, { login_hint: loginHint, scope: SIM_SWAP });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('access_denied');
    }
  });
});
