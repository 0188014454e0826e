import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import * as client from 'openid-client';
import { importJWK } from 'jose';
import { createNetAuth, type NetAuth, type RegisteredClient } from '../../lib/index.js';
import { CAMARA_KEY } from '../helpers/client-jwts.js';
import { KEY_A } from '../helpers/keys.js';
import { listen } from '../helpers/listen.js';
import { REDIRECT_URI, openidCodeFlow } from '../helpers/openid-code-flow.js';

const NV = 'dpv:FraudPreventionAndDetection number-verification:verify';

const NV_CLIENT: RegisteredClient = {
  clientId: 'nv-app',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk] },
  redirectUris: [REDIRECT_URI],
  grantTypes: ['authorization_code', 'refresh_token'],
  scopes: ['dpv:FraudPreventionAndDetection#number-verification:verify'],
};

/**
 * Number Verification end to end with the real openid-client v6 under `profile: 'camara'`: the code flow from the
 * device's network (loopback plays the mobile network), the plain consent rule the preset completes, the ID token
 * the library validates saying the network identified the subscriber (`amr`), and one answer from the NV route.
 */
describe('interop: openid-client v6, Number Verification under the CAMARA preset', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  let netauth: NetAuth;
  let config: client.Configuration;

  beforeAll(async () => {
    const app = express();
    server = await listen(app);
    const issuer = `${server.url}/apigateway`;
    netauth = createNetAuth({
      issuer,
      profile: 'camara',
      clients: [NV_CLIENT],
      subscribers: [{ id: 'sub-alice', phoneNumber: '+34600000001', addresses: ['127.0.0.1'] }],
      network: { mobileRanges: ['127.0.0.0/8'] },
      // A plain rule: the preset gives it Number Verification's token rules.
      consentPolicy: [
        { purpose: 'FraudPreventionAndDetection', scope: 'number-verification:verify', basis: 'legitimate-interest' },
      ],
      signingKeys: [KEY_A],
      pairwiseSalt: 'nv-interop-salt',
    });
    app.use('/apigateway', netauth.router);
    app.post('/number-verification/v2/verify', netauth.guard({ scope: 'number-verification:verify' }), (req, res) => {
      res.json({ devicePhoneNumberVerified: req.netauth?.subscriber.phoneNumber === '+34600000001' });
    });
    const { alg: _alg, ...jwk } = CAMARA_KEY.privateJwk;
    const key = { key: (await importJWK(jwk, CAMARA_KEY.alg)) as client.CryptoKey, kid: CAMARA_KEY.privateJwk.kid! };
    config = await client.discovery(new URL(issuer), NV_CLIENT.clientId, undefined, client.PrivateKeyJwt(key), {
      execute: [client.allowInsecureRequests],
    });
  });

  afterAll(async () => {
    await netauth.close();
    await server.close();
  });

  it('the code flow from the device: a 300 s token, no refresh token, amr hwk, one answer from the NV route', async () => {
    const { tokens } = await openidCodeFlow(config, `openid ${NV} offline_access`);
    // offline_access is not granted with a single-use scope, and the scope says so.
    expect(tokens.scope).toBe(`openid ${NV}`);
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.expires_in).toBeLessThanOrEqual(300);
    expect(tokens.claims()).toMatchObject({ aud: NV_CLIENT.clientId, amr: ['hwk'] });
    const verify = () =>
      fetch(`${server.url}/number-verification/v2/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
    const first = await verify();
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ devicePhoneNumberVerified: true });
    expect((await verify()).status).toBe(401);
  });
});
