import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import express from 'express';
import * as client from 'openid-client';
import { createNetAuth, type NetAuth } from '../../lib/index.js';
import { CLIENTS, POLICY, SECRET, SIM_SWAP, SUBSCRIBERS } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';
import { openidCodeFlow } from '../helpers/openid-code-flow.js';

const OPENID_SIM_SWAP = `openid ${SIM_SWAP}`;

/**
 * The real openid-client v6 against a gateway with every option at its default (only what has none is given, and
 * the network ranges the frontend flow identifies by): a requested `openid` is granted with an ID token, which the
 * library validates (signature through jwks_uri, nonce, iss, aud) in the code flow and in CIBA.
 */
describe('interop: openid-client v6 against the defaults', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  let netauth: NetAuth;
  let issuer: string;
  let config: client.Configuration;

  beforeAll(async () => {
    // The development key's start-up warning is expected here; it is checked in test/gateway/options.test.ts.
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const app = express();
    server = await listen(app);
    issuer = `${server.url}/apigateway`;
    netauth = createNetAuth({
      issuer,
      clients: CLIENTS,
      // Loopback is Alice's mobile line, for the frontend flow.
      subscribers: SUBSCRIBERS.map((s) =>
        s.id === 'sub-alice' ? { ...s, addresses: [...s.addresses!, '127.0.0.1'] } : s,
      ),
      network: { mobileRanges: ['127.0.0.0/8'] },
      consentPolicy: POLICY,
    });
    vi.restoreAllMocks();
    app.use('/apigateway', netauth.router);
    config = await client.discovery(new URL(issuer), 'app-1', undefined, client.ClientSecretBasic(SECRET), {
      execute: [client.allowInsecureRequests],
    });
    client.enableNonRepudiationChecks(config);
  });

  afterAll(async () => {
    await netauth.close();
    await server.close();
  });

  it('code flow with nonce: openid granted with an ID token the library validates', async () => {
    const { tokens, nonce } = await openidCodeFlow(config, OPENID_SIM_SWAP);
    expect(tokens.scope).toBe(OPENID_SIM_SWAP);
    expect(tokens.claims()).toMatchObject({ iss: issuer, aud: 'app-1', nonce });
  });

  it('CIBA: openid granted with an ID token the library validates', async () => {
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'tel:+34600000001',
      scope: OPENID_SIM_SWAP,
    });
    const tokens = await client.pollBackchannelAuthenticationGrant(config, started);
    expect(tokens.scope).toBe(OPENID_SIM_SWAP);
    expect(tokens.claims()).toMatchObject({ iss: issuer, aud: 'app-1' });
  });
});
