import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler } from 'express';
import session from 'express-session';
import { createNetAuth, type NetAuth } from '../../lib/index.js';
import { createNetAuthClient, NetAuthClientError, type NetAuthClient } from '../../lib/client/index.js';
import { CLIENTS, POLICY, SECRET, SUBSCRIBERS, SIM_SWAP } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';
import { Browser } from '../helpers/browser.js';

/**
 * Issue 44: an application asking `openid` of a gateway with `idTokens: false`. The gateway leaves `openid` out of
 * discovery's scopes_supported and of what it grants; the application learned it at the callback, as a 502
 * token_error blaming the gateway. Now both flows refuse before anything is sent, naming the cause.
 */
describe('app side: openid asked of a gateway without ID tokens', () => {
  const app = express();
  let server: Awaited<ReturnType<typeof listen>>;
  let netauth: NetAuth;
  let client: NetAuthClient;
  const OPENID = `openid ${SIM_SWAP}`;

  beforeAll(async () => {
    server = await listen(app);
    const base = server.url;
    netauth = createNetAuth({
      issuer: `${base}/apigateway`,
      clients: [{ ...CLIENTS[0]!, redirectUris: [`${base}/app/callback`] }],
      subscribers: SUBSCRIBERS.map((s) =>
        s.id === 'sub-alice' ? { ...s, addresses: [...s.addresses!, '127.0.0.1'] } : s,
      ),
      consentPolicy: POLICY,
      network: { mobileRanges: ['127.0.0.0/8'] },
      idTokens: false,
      pairwiseSalt: 'test-salt',
    });
    app.use('/apigateway', netauth.router);
    client = createNetAuthClient({
      gateway: `${base}/apigateway`,
      clientId: 'app-1',
      clientSecret: SECRET,
      redirectUri: `${base}/app/callback`,
      allowInsecureRequests: true,
    });
    const router = express.Router();
    router.use(session({ secret: 'test', resave: false, saveUninitialized: false }));
    router.get('/verify', client.start({ scope: OPENID, returnTo: '/app/done' }));
    router.get('/verify-plain', client.start({ scope: SIM_SWAP, returnTo: '/app/done' }));
    router.get('/callback', client.callback());
    router.get('/done', (req, res) => void res.json({ scope: client.token(req)?.scope }));
    const errors: ErrorRequestHandler = (err: unknown, _req, res, _next) => {
      const status = err instanceof NetAuthClientError ? err.status : 500;
      res.status(status).json({
        kind: err instanceof NetAuthClientError ? err.kind : 'other',
        message: err instanceof Error ? err.message : String(err),
      });
    };
    router.use(errors);
    app.use('/app', router);
  });

  afterAll(async () => {
    await netauth.close();
    await server.close();
  });

  it('frontend flow: start answers misconfigured naming openid and scopes_supported; no redirect to the gateway', async () => {
    const res = await new Browser().request(`${server.url}/app/verify`);
    expect(res.status).toBe(500);
    expect(res.headers.get('location')).toBeNull();
    const body = (await res.json()) as { kind: string; message: string };
    expect(body.kind).toBe('misconfigured');
    expect(body.message).toContain('grants no openid');
    expect(body.message).toContain('scopes_supported');
    // Without openid, the same client and gateway work.
    const { res: done } = await new Browser().navigate(`${server.url}/app/verify-plain`);
    expect(await done.json()).toEqual({ scope: SIM_SWAP });
  });

  it('backend flow: backchannel() rejects with misconfigured before bc-authorize', async () => {
    const rejected = await client
      .backchannel({ login_hint: 'tel:+34600000001', scope: OPENID })
      .catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(NetAuthClientError);
    expect(rejected).toMatchObject({ kind: 'misconfigured', status: 500 });
    expect((rejected as Error).message).toMatch(/^the gateway http:\/\/127\.0\.0\.1:\d+\/apigateway grants no openid/);
    const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(token.scope).toBe(SIM_SWAP);
  });
});
