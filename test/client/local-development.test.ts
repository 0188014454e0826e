import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler } from 'express';
import session from 'express-session';
import { createNetAuth, type NetAuth } from '../../lib/index.js';
import { createNetAuthClient, NetAuthClientError } from '../../lib/client/index.js';
import { CLIENTS, POLICY, SECRET, SUBSCRIBERS, SIM_SWAP } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';
import { Browser } from '../helpers/browser.js';

/**
 * docs/client.md's application example copied to http://localhost: express-session does not send a `secure`
 * cookie over plain HTTP, and says nothing. The flow must say what went wrong where it starts, and a callback
 * that comes back without the session must say that the session cookie is the likely cause.
 */
describe('app side on plain HTTP (local development)', () => {
  const app = express();
  let server: Awaited<ReturnType<typeof listen>>;
  let base: string;
  let netauth: NetAuth;

  beforeAll(async () => {
    server = await listen(app);
    base = server.url;
    netauth = createNetAuth({
      issuer: `${base}/apigateway`,
      clients: [{ ...CLIENTS[0]!, redirectUris: [`${base}/secure/callback`, `${base}/plain/callback`] }],
      subscribers: SUBSCRIBERS.map((s) =>
        s.id === 'sub-alice' ? { ...s, addresses: [...s.addresses!, '127.0.0.1'] } : s,
      ),
      consentPolicy: POLICY,
      network: { mobileRanges: ['127.0.0.0/8'] },
    });
    app.use('/apigateway', netauth.router);
    for (const [prefix, secure] of [
      ['/secure', true],
      ['/plain', false],
    ] as const) {
      const client = createNetAuthClient({
        gateway: `${base}/apigateway`,
        clientId: 'app-1',
        clientSecret: SECRET,
        redirectUri: `${base}${prefix}/callback`,
        allowInsecureRequests: true,
      });
      const router = express.Router();
      router.use(
        session({ secret: 'test', resave: false, saveUninitialized: false, cookie: { secure, sameSite: 'lax' } }),
      );
      router.get('/verify', client.start({ scope: SIM_SWAP, returnTo: `${prefix}/done` }));
      router.get('/callback', client.callback());
      router.get('/done', (req, res) => void res.json({ token: client.token(req) !== undefined }));
      const errors: ErrorRequestHandler = (err: unknown, _req, res, _next) => {
        res.status(500).json({
          kind: err instanceof NetAuthClientError ? err.kind : 'other',
          message: err instanceof Error ? err.message : String(err),
        });
      };
      router.use(errors);
      app.use(prefix, router);
    }
  });

  afterAll(async () => {
    await netauth.close();
    await server.close();
  });

  it('cookie.secure over http: start fails at once, naming cookie.secure and the fix; no redirect to the gateway', async () => {
    const res = await new Browser().request(`${base}/secure/verify`);
    expect(res.status).toBe(500);
    expect(res.headers.get('location')).toBeNull();
    const body = (await res.json()) as { kind: string; message: string };
    expect(body.kind).toBe('misconfigured');
    expect(body.message).toContain('session cookie is `secure` but this request is plain HTTP');
    expect(body.message).toContain('cookie.secure to false');
  });

  it('cookie.secure false on http://localhost: the flow completes', async () => {
    const { res } = await new Browser().navigate(`${base}/plain/verify`);
    expect(await res.json()).toEqual({ token: true });
  });

  it('a callback without the session cookie: state_mismatch that points at the session cookie', async () => {
    const { res, url } = await new Browser().navigate(
      `${base}/plain/verify`,
      (next) => next.pathname === '/plain/callback',
    );
    await res.body?.cancel();
    const lost = await new Browser().request(url);
    expect(await lost.json()).toMatchObject({
      kind: 'state_mismatch',
      message: expect.stringContaining('did not send the session cookie back'),
    });
  });
});
