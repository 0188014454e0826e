import { afterEach, describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler } from 'express';
import request from 'supertest';
import * as client from 'openid-client';
import { createNetAuth, type NetAuth } from '../../lib/index.js';
import { CLIENTS, POLICY, SECRET, SUBSCRIBERS } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';

/**
 * RFC 8414 §3.1: the metadata of the issuer `https://host/apigateway` is at the host's root,
 * `/.well-known/oauth-authorization-server/apigateway`. `netauth.wellKnown`, mounted at the application's root,
 * serves it; openid-client finds it with `algorithm: 'oauth2'`.
 */
describe('RFC 8414 metadata at the host root (netauth.wellKnown)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  async function gateway(
    path: string,
    mountWellKnown: boolean,
  ): Promise<{ issuer: string; netauth: NetAuth; app: express.Express }> {
    const app = express();
    const server = await listen(app);
    const issuer = `${server.url}${path}`;
    const netauth = createNetAuth({ issuer, clients: CLIENTS, subscribers: SUBSCRIBERS, consentPolicy: POLICY });
    if (mountWellKnown) app.use(netauth.wellKnown);
    app.use(path, netauth.router);
    closers.push(
      () => netauth.close(),
      () => server.close(),
    );
    return { issuer, netauth, app };
  }

  const discover = (issuer: string) =>
    client.discovery(new URL(issuer), 'app-1', undefined, client.ClientSecretBasic(SECRET), {
      algorithm: 'oauth2',
      execute: [client.allowInsecureRequests],
    });

  it("openid-client's oauth2 discovery finds the issuer's metadata and its endpoints", async () => {
    const { issuer, netauth } = await gateway('/apigateway', true);
    const config = await discover(issuer);
    expect(config.serverMetadata()).toMatchObject({
      issuer,
      token_endpoint: `${issuer}/token`,
      backchannel_authentication_endpoint: `${issuer}/bc-authorize`,
    });
    expect(config.serverMetadata()).toEqual(netauth.metadata());
  });

  it('without it, the root path is not served and oauth2 discovery fails (what the router alone gives)', async () => {
    const { issuer } = await gateway('/apigateway', false);
    await expect(discover(issuer)).rejects.toThrow();
  });

  it('an issuer path with characters that are pattern syntax is matched literally', async () => {
    const { issuer, app } = await gateway('/api.gw$/v1|2', true);
    expect((await discover(issuer)).serverMetadata().issuer).toBe(issuer);
    expect((await request(app).get('/.well-known/oauth-authorization-server/apiXgw$/v1|2')).status).toBe(404);
    expect((await request(app).get('/.well-known/oauth-authorization-server/api.gw$/v1')).status).toBe(404);
  });

  it("other methods: 405 with Allow; other paths and the application's own errors pass through untouched", async () => {
    const { app } = await gateway('/apigateway', true);
    app.get('/boom', () => {
      throw new Error('the application failed');
    });
    const appErrors: ErrorRequestHandler = (err: Error, _req, res, _next) => {
      res.status(500).type('text').send(`app handler: ${err.message}`);
    };
    app.use(appErrors);
    const post = await request(app).post('/.well-known/oauth-authorization-server/apigateway');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect((await request(app).get('/.well-known/oauth-authorization-server/other')).status).toBe(404);
    const boom = await request(app).get('/boom');
    expect(boom.text).toBe('app handler: the application failed');
  });
});
