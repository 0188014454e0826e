/**
 * DPoP on the app side (`dpop` option of express-netauth/client, openid-client's DPoP support): token requests of
 * both flows carry a proof, so the tokens come back bound (`token_type` DPoP), and `fetch` calls the service API
 * with `Authorization: DPoP` and a fresh proof. Against this package's gateway and against node-oidc-provider
 * (DPoP on by default there), over real HTTP.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import type { JWK } from 'jose';
import { createNetAuth } from '../../lib/index.js';
import { createNetAuthClient } from '../../lib/client/index.js';
import { GATEWAYS, type GatewayUnderTest } from '../helpers/client-gateways.js';
import { json, mountClientApp, rejection, startClientFixture, type ClientApp } from '../helpers/client-app.js';
import { describeNoSecretsInErrors, rememberSecrets, watchSecrets } from '../helpers/client-secrets.js';
import { Browser } from '../helpers/browser.js';
import { CLIENTS, POLICY, SECRET, SIM_SWAP, SUBSCRIBERS } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';

watchSecrets();
rememberSecrets(SECRET);

/** A private EC P-256 JWK, as an application would keep its DPoP key (the same on every instance). */
const DPOP_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }) as JWK;
rememberSecrets(DPOP_KEY.d);

describe.each(GATEWAYS)('dpop option, against $name', ({ start }) => {
  let gw: GatewayUnderTest;
  let bound: ClientApp;
  let random: ClientApp;
  let plain: ClientApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    let host: express.Express;
    let base: string;
    ({ host, base, gw, app: plain, close } = await startClientFixture(start, ['/bound', '/random']));
    bound = mountClientApp(host, base, '/bound', gw, 'secret', { dpop: { privateKey: DPOP_KEY } });
    random = mountClientApp(host, base, '/random', gw, 'secret', { dpop: true });
  });
  afterAll(() => close());

  it('frontend flow: the code is exchanged with a proof, the session token is bound and fetch() proves possession', async () => {
    for (const app of [bound, random]) {
      const browser = new Browser();
      const signedIn = await json((await browser.navigate(`${app.url}/start`)).res);
      const token = signedIn.token as { access_token: string; token_type: string };
      expect(token.token_type).toBe('dpop');
      const api = await browser.request(`${app.url}/api`);
      expect(api.status).toBe(200);
      // Without the proof the token is worth nothing to whoever copies it (node-oidc-provider answers a DPoP
      // scheme without a proof 400 invalid_request, this gateway 401 invalid_dpop_proof).
      expect((await fetch(gw.serviceApi, { headers: { authorization: `Bearer ${token.access_token}` } })).status).toBe(
        401,
      );
      const noProof = await fetch(gw.serviceApi, { headers: { authorization: `DPoP ${token.access_token}` } });
      expect(noProof.status).toBe(gw.name === 'express-netauth' ? 401 : 400);
    }
  });

  it('backend flow: the polls carry proofs, the token is bound, and fetch(token, …) calls the service API with it', async () => {
    const token = await bound.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
    expect(token.token_type).toBe('dpop');
    const api = await bound.client.fetch(token, gw.serviceApi);
    expect(api.status).toBe(200);
    expect((await fetch(gw.serviceApi, { headers: { authorization: `Bearer ${token.access_token}` } })).status).toBe(
      401,
    );
    // The same token through another client's key: the service API refuses, and fetch hands back its answer.
    const stolen = await random.client.fetch(token, gw.serviceApi);
    expect(stolen.status).toBe(401);
    expect(stolen.headers.get('www-authenticate')).toMatch(/DPoP/);
  });

  it('without the option nothing changes: Bearer tokens, and fetch(token, …) sends them as Bearer', async () => {
    const token = await plain.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
    expect(token.token_type).toBe('bearer');
    expect((await plain.client.fetch(token, gw.serviceApi)).status).toBe(200);
  });

  it('a bound token given to a client without a DPoP key: misconfigured, nothing sent', async () => {
    const token = await bound.client.backchannel({ login_hint: gw.hints.approved, scope: gw.scope });
    const error = await rejection(plain.client.fetch(token, gw.serviceApi));
    expect(error.kind).toBe('misconfigured');
    expect(error.message).toMatch(/set the client option dpop/);
  });
});

describe('dpop option: a gateway that requires DPoP, and a service API in the CAMARA format', () => {
  let url: string;
  let close: () => Promise<void>;
  const received: Array<{ method: string; body: unknown; dpop: boolean }> = [];

  beforeAll(async () => {
    const app = express();
    const server = await listen(app);
    url = server.url;
    const netauth = createNetAuth({
      issuer: `${url}/apigateway`,
      clients: [{ ...CLIENTS[1]!, dpopBoundAccessTokens: true }],
      subscribers: SUBSCRIBERS,
      consentPolicy: POLICY,
      lifetimes: { pollInterval: 1 },
    });
    app.use('/apigateway', netauth.router);
    app.post(
      '/sim-swap/check',
      netauth.guard({ scope: 'sim-swap', errorFormat: 'camara', device: { identifier: 'phoneNumber' } }),
      (req, res) => {
        received.push({ method: req.method, body: req.body as unknown, dpop: req.headers.dpop !== undefined });
        res.json({ swapped: false, phoneNumber: req.netauth?.device?.subscriber.phoneNumber });
      },
    );
    close = async () => {
      await server.close();
      await netauth.close();
    };
  });
  afterAll(() => close());

  const client = (dpop: boolean) =>
    createNetAuthClient({
      gateway: `${url}/apigateway`,
      clientId: 'app-2',
      clientSecret: 'other-secret',
      allowInsecureRequests: true,
      ...(dpop ? { dpop: true } : {}),
    });

  it('a client registered with dpopBoundAccessTokens: without a proof the poll is refused, with the option it works', async () => {
    const refused = await rejection(client(false).backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP }));
    expect(refused.error).toBe('invalid_dpop_proof');
    expect(refused.kind).toBe('misconfigured');
    const netauth = client(true);
    const token = await netauth.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    const api = await netauth.fetch(token, `${url}/sim-swap/check`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ maxAge: 120 }),
    });
    expect(api.status).toBe(200);
    expect(await api.json()).toEqual({ swapped: false, phoneNumber: '+34600000001' });
    expect(received.at(-1)).toEqual({ method: 'POST', body: { maxAge: 120 }, dpop: true });
    // The CAMARA API's refusal comes back as the Response, for the application to read.
    const unnecessary = await netauth.fetch(token, `${url}/sim-swap/check`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phoneNumber: '+34600000001' }),
    });
    expect(unnecessary.status).toBe(422);
    expect(await unnecessary.json()).toMatchObject({ code: 'UNNECESSARY_IDENTIFIER' });
  });

  it('an aborted call rejects with kind aborted', async () => {
    const netauth = client(true);
    const token = await netauth.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    const error = await rejection(
      netauth.fetch(token, `${url}/sim-swap/check`, { method: 'POST', signal: AbortSignal.abort() }),
    );
    expect(error.kind).toBe('aborted');
  });

  it('a service API that cannot be reached rejects with kind unavailable, as with a Bearer token', async () => {
    const netauth = client(true);
    const token = await netauth.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    const error = await rejection(netauth.fetch(token, 'http://127.0.0.1:9/sim-swap/check', { method: 'POST' }));
    expect(error.kind).toBe('unavailable');
    expect(error.message).toBe('the service API could not be reached');
  });
});

describe('dpop option checks at start-up', () => {
  const common = { gateway: 'https://gw.example/apigateway', clientId: 'app', clientSecret: 's' };

  it('refuses what cannot work, naming the option', () => {
    const { d: _d, ...publicOnly } = DPOP_KEY;
    expect(() => createNetAuthClient({ ...common, dpop: { privateKey: publicOnly } })).toThrow(
      /dpop.privateKey must be a PRIVATE JWK/,
    );
    expect(() => createNetAuthClient({ ...common, dpop: { privateKey: { ...DPOP_KEY, x: 'AAAA' } } })).toThrow(
      /dpop.privateKey is not a usable private JWK/,
    );
    expect(() => createNetAuthClient({ ...common, dpop: 'yes' as unknown as boolean })).toThrow(
      /dpop must be true, false or \{ privateKey/,
    );
    expect(() => createNetAuthClient({ ...common, dpop: { privateKey: { kty: 'oct', k: 'c2VjcmV0' } } })).toThrow(
      /dpop.privateKey must be a PRIVATE JWK/,
    );
    expect(createNetAuthClient({ ...common, dpop: { privateKey: DPOP_KEY } })).toBeDefined();
  });
});

describeNoSecretsInErrors('dpop', { errors: 5, secrets: 10 });
