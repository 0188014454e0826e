import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import * as client from 'openid-client';
import { createNetAuth, type NetAuth } from '../../lib/index.js';
import { CLIENTS, POLICY, SECRET, SUBSCRIBERS, SIM_SWAP, LOCATION } from '../helpers/gateway.js';

/**
 * The real openid-client v6 against a listening gateway: discovery, ClientSecretBasic (which
 * percent-encodes the secret's `-`, `_`, `.`), CIBA initiate + poll, then a service-API call.
 */
describe('interop: openid-client v6, backend flow', () => {
  let server: Server;
  let netauth: NetAuth;
  let base: string;

  beforeAll(async () => {
    const app = express();
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    netauth = createNetAuth({
      issuer: `${base}/apigateway`,
      clients: CLIENTS,
      subscribers: SUBSCRIBERS,
      consentPolicy: POLICY,
      // One second keeps the test short; openid-client waits `interval` between polls.
      lifetimes: { pollInterval: 1 },
    });
    app.use('/apigateway', netauth.router);
    app.post('/sim-swap/check', netauth.guard({ scope: 'sim-swap' }), (req, res) => {
      res.json({ swapped: false, subscriber: req.netauth?.subscriber.id });
    });
    app.get('/location', netauth.guard({ scope: 'device-location' }), (_req, res) => void res.json({}));
  });

  afterAll(async () => {
    await netauth.close();
    await new Promise((resolve) => server.close(resolve));
  });

  async function configuration(): Promise<client.Configuration> {
    return client.discovery(new URL(`${base}/apigateway`), 'app-1', undefined, client.ClientSecretBasic(SECRET), {
      execute: [client.allowInsecureRequests],
    });
  }

  it('gets a token and calls the service API: 200 with it, 401 without, 403 for another scope', async () => {
    const config = await configuration();
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'tel:+34600000001',
      scope: SIM_SWAP,
    });
    expect(started.expires_in).toBe(120);
    const tokens = await client.pollBackchannelAuthenticationGrant(config, started);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.scope).toBe(SIM_SWAP);

    const call = (authorization?: string) =>
      fetch(`${base}/sim-swap/check`, { method: 'POST', headers: authorization ? { authorization } : {} });
    const ok = await call(`Bearer ${tokens.access_token}`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ swapped: false, subscriber: 'sub-alice' });
    const missing = await call();
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);

    const otherScope = await fetch(`${base}/location`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(otherScope.status).toBe(403);
    expect(otherScope.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
  });

  it('waits through authorization_pending until consent is granted out-of-band', async () => {
    const config = await configuration();
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'tel:+34600000002',
      scope: LOCATION,
    });
    setTimeout(() => {
      void netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000002', scope: LOCATION });
    }, 1500);
    const tokens = await client.pollBackchannelAuthenticationGrant(config, started);
    expect(tokens.scope).toBe(LOCATION);
  });

  it('surfaces access_denied as an openid-client error', async () => {
    const config = await configuration();
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'tel:+34600000001',
      scope: LOCATION,
    });
    await netauth.consent.deny({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    await expect(client.pollBackchannelAuthenticationGrant(config, started)).rejects.toMatchObject({
      error: 'access_denied',
    });
  });

  it('bc-authorize errors reach openid-client as OAuth errors', async () => {
    const config = await configuration();
    await expect(
      client.initiateBackchannelAuthentication(config, { login_hint: 'tel:+34699999999', scope: SIM_SWAP }),
    ).rejects.toMatchObject({ error: 'unknown_user_id', status: 400 });
  });
});
