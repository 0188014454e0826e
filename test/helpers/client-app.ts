/**
 * An application built with express-netauth/client, as a developer would write it, mounted under a prefix
 * of a listening Express app; and the record of every error the client threw, for the check that none of
 * them carries a secret (test/helpers/client-secrets.ts).
 */
import express, { type ErrorRequestHandler, type Express } from 'express';
import session from 'express-session';
import {
  createNetAuthClient,
  NetAuthClientError,
  type NetAuthClient,
  type NetAuthClientOptions,
} from '../../lib/client/index.js';
import type { GatewayUnderTest, RedirectUris } from './client-gateways.js';
import { listen } from './listen.js';
import { recordError } from './client-secrets.js';

export interface ClientApp {
  /** `http://127.0.0.1:<port><prefix>` */
  url: string;
  client: NetAuthClient;
  /** Added to the real time by the client's clock (expiry without waiting). */
  clock: { offset: number };
}

/** The options of the gateway's client_secret_basic or CAMARA client for an app at `url`. */
export function clientOptions(
  gw: GatewayUnderTest,
  url: string,
  kind: 'secret' | 'camara',
  clock: { offset: number },
): NetAuthClientOptions {
  const credentials =
    kind === 'secret'
      ? { clientId: gw.secretClient.clientId, clientSecret: gw.secretClient.clientSecret }
      : { clientId: gw.camaraClient.clientId, privateKey: gw.camaraClient.privateKey, signedRequests: true };
  return {
    gateway: gw.issuer,
    ...credentials,
    redirectUri: `${url}/callback`,
    allowInsecureRequests: true,
    now: () => Date.now() + clock.offset,
  };
}

/**
 * Mounts the application: /start (frontend flow to /me), /callback, /me (the session's token), /api (client.fetch to the service API),
 * /protected (requireToken, GET and POST), /logout (POST), /backend (the one-call backend flow), and an
 * error handler that records the error and answers `{kind, error, token}` with the error's status.
 */
export function mountClientApp(
  host: Express,
  base: string,
  prefix: string,
  gw: GatewayUnderTest,
  kind: 'secret' | 'camara' = 'secret',
  overrides: Partial<NetAuthClientOptions> = {},
  /** The scope /start and /protected ask for (default the gateway's), and /start's prompt. */
  asks: { scope?: string; prompt?: 'consent' } = {},
): ClientApp {
  const url = `${base}${prefix}`;
  const clock = { offset: 0 };
  const client = createNetAuthClient({ ...clientOptions(gw, url, kind, clock), ...overrides });
  const router = express.Router();
  router.use(
    session({
      secret: 'client-tests-session-secret',
      resave: false,
      saveUninitialized: false,
      name: `sid${prefix.replace(/\W/g, '')}`,
    }),
  );
  const scope = asks.scope ?? gw.scope;
  router.get(
    '/start',
    client.start({
      scope,
      ...(asks.prompt ? { prompt: asks.prompt } : {}),
      login_hint: (req) => (typeof req.query.hint === 'string' ? req.query.hint : undefined),
      data: { from: 'start' },
      returnTo: `${prefix}/me`,
    }),
  );
  router.get('/callback', client.callback());
  router.get('/me', (req, res) => void res.json({ token: client.token(req) ?? null, sessionId: req.sessionID }));
  const required = client.requireToken({ scope, ...(asks.prompt ? { prompt: asks.prompt } : {}) });
  const protectedRoute: express.RequestHandler = (req, res) =>
    void res.json({ route: req.originalUrl, token: client.token(req) ?? null });
  router.get('/protected', required, protectedRoute);
  router.post('/protected', required, protectedRoute);
  router.get('/api', (req, res, next) => {
    // Errors to the error handler on Express 4 too (it does not catch a rejected route promise).
    client
      .fetch(req, gw.serviceApi)
      .then(async (api) => void res.status(api.status).json(await api.json()))
      .catch(next);
  });
  router.post('/logout', client.logout({ successRedirect: `${prefix}/me` }));
  router.get('/backend', async (req, res) => {
    const token = await client.backchannel({
      login_hint: String(req.query.hint ?? gw.hints.approved),
      scope: gw.scope,
    });
    res.json(token);
  });
  const errors: ErrorRequestHandler = (error, req, res, _next) => {
    recordError(error);
    if (!(error instanceof NetAuthClientError))
      return void res.status(500).json({ kind: 'unexpected', message: String(error) });
    let token = null;
    try {
      token = client.token(req) ?? null;
    } catch {
      // no session: the error said so
    }
    res.status(error.status).json({ kind: error.kind, error: error.error ?? null, token });
  };
  router.use(errors);
  host.use(prefix, router);
  return { url, client, clock };
}

export interface ClientFixture {
  host: Express;
  /** `http://127.0.0.1:<port>` of the host. */
  base: string;
  gw: GatewayUnderTest;
  /** The client_secret_basic application at /app. */
  app: ClientApp;
  close(): Promise<void>;
}

/** A listening host, a gateway registered for its `/app` callback (and those of `prefixes`), and the application at /app. */
export async function startClientFixture(
  start: (uris: RedirectUris) => Promise<GatewayUnderTest>,
  prefixes: string[] = [],
): Promise<ClientFixture> {
  const host = express();
  const server = await listen(host);
  const base = server.url;
  const gw = await start({
    secret: ['/app', ...prefixes].map((prefix) => `${base}${prefix}/callback`),
    camara: [`${base}/camara/callback`],
  });
  const app = mountClientApp(host, base, '/app', gw);
  return {
    host,
    base,
    gw,
    app,
    close: async () => {
      await server.close();
      await gw.close();
    },
  };
}

/** Awaits a promise that must reject with a NetAuthClientError, records it and returns it. */
export async function rejection(promise: Promise<unknown>): Promise<NetAuthClientError> {
  try {
    await promise;
  } catch (error) {
    recordError(error);
    if (!(error instanceof NetAuthClientError)) throw error;
    return error;
  }
  throw new Error('expected a rejection');
}

export async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}
