import express, { type RequestHandler, type Router } from 'express';
import type { GatewayContext } from './context.js';
import { ClientAuthenticator } from './client-auth/authenticator.js';
import { action, formBody } from './http/form.js';
import { frontendHeaders, methodNotAllowed, noStore } from './http/headers.js';
import { frontendErrorHandler, jsonErrorHandler } from './http/render-error.js';
import { observe } from './http/observe.js';
import { dispatch, type EndpointRoute } from './http/dispatch.js';
import { bcAuthorize } from './endpoints/bc-authorize.js';
import { tokenEndpoint } from './endpoints/token.js';
import { discoveryEndpoint } from './endpoints/discovery.js';
import { jwksEndpoint } from './endpoints/jwks.js';
import type { Grant } from './grants/grant.js';
import { cibaGrant } from './grants/ciba.js';
import { authorizationCodeGrant } from './grants/authorization-code.js';
import { refreshTokenGrant } from './grants/refresh-token.js';
import { clientCredentialsGrant } from './grants/client-credentials.js';
import { jwtBearerGrant } from './grants/jwt-bearer.js';
import { authorizeEndpoint } from './endpoints/authorize.js';
import { ConsentPage } from './endpoints/consent-page.js';
import { introspectionEndpoint } from './endpoints/introspection.js';
import { revocationEndpoint } from './endpoints/revocation.js';
import type { Endpoint } from '../ops/events.js';

/**
 * The gateway router: each endpoint is a declarative stack (observer, headers, body, action) per method, found by
 * its path in one step (http/dispatch.ts); errors go to one renderer per kind. Mount it at the issuer's path.
 */
export function createRouter(ctx: GatewayContext): Router {
  const router = express.Router();
  const auth = new ClientAuthenticator(ctx.clients, ctx.realm, {
    events: ctx.events,
    ...(ctx.limits ? { limits: ctx.limits } : {}),
    assertions: { jwts: ctx.clientJwts, issuer: ctx.issuer },
  });
  const form = formBody(ctx.bodyLimit);
  const grants: Grant[] = [cibaGrant, authorizationCodeGrant, refreshTokenGrant, clientCredentialsGrant, jwtBearerGrant];
  const consentPage = new ConsentPage(ctx);
  const events = ctx.events;
  const on = (endpoint: Endpoint) => observe(events, endpoint);

  const json = jsonErrorHandler(ctx.onError);
  // The frontend flow answers browsers: redirects and HTML pages, never JSON (except 405), from its own error handler.
  const page = frontendErrorHandler(ctx.issuer, ctx.consentPage, ctx.onError);
  const routes: EndpointRoute[] = [
    {
      path: '/authorize',
      methods: { GET: [on('authorize'), frontendHeaders, action(authorizeEndpoint(ctx, consentPage))] },
      otherwise: [on('authorize'), frontendHeaders, methodNotAllowed('GET, HEAD')],
      errors: page,
    },
    {
      path: '/consent',
      methods: {
        GET: [on('consent'), frontendHeaders, consentPage.session, action(consentPage.show)],
        POST: [on('consent'), frontendHeaders, form, consentPage.session, action(consentPage.decide)],
      },
      otherwise: [on('consent'), frontendHeaders, methodNotAllowed('GET, HEAD, POST')],
      errors: page,
    },
    post('/bc-authorize', on('bc-authorize'), action(bcAuthorize(ctx, auth))),
    post('/token', observe(events, 'token', new Set(grants.map((g) => g.type))), action(tokenEndpoint(ctx, auth, grants))),
    post('/introspect', on('introspect'), action(introspectionEndpoint(ctx, auth))),
    post('/revoke', on('revoke'), action(revocationEndpoint(ctx, auth))),
  ];
  /** A client-authenticated JSON endpoint: POST with a form body, never cached. */
  function post(path: string, observer: RequestHandler, handler: RequestHandler): EndpointRoute {
    return { path, methods: { POST: [observer, noStore, form, handler] }, otherwise: [observer, noStore, methodNotAllowed('POST')], errors: json };
  }
  const document = discoveryEndpoint(ctx);
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    routes.push({ path, methods: { GET: [on('discovery'), document] }, otherwise: [on('discovery'), methodNotAllowed('GET, HEAD')], errors: json });
  }
  if (ctx.keys) routes.push({ path: '/jwks', methods: { GET: [on('jwks'), jwksEndpoint(ctx.keys)] }, otherwise: [on('jwks'), methodNotAllowed('GET, HEAD')], errors: json });

  router.use(dispatch(routes));
  // Errors handed to the router by the application's own middleware before it.
  router.use(json);
  return router;
}

/**
 * RFC 8414 §3.1 puts the metadata at the host's root: `/.well-known/oauth-authorization-server` followed by the
 * issuer's path (openid-client's `discovery(…, { algorithm: 'oauth2' })` looks there). The router above, mounted
 * at the issuer's path, cannot answer at the root: this one is mounted by the application at its root.
 */
export function createWellKnownRouter(ctx: GatewayContext): Router {
  const issuerPath = new URL(ctx.issuer).pathname.replace(/\/$/, '');
  const path = `/.well-known/oauth-authorization-server${issuerPath}`;
  const router = express.Router();
  // A RegExp, so that characters of the issuer's path are never read as route syntax (Express 4 and 5 differ).
  router
    .route(new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`))
    .all(observe(ctx.events, 'discovery'))
    .get(discoveryEndpoint(ctx))
    .all(methodNotAllowed('GET, HEAD'));
  // No error handler here: mounted at the root, it would also catch the errors of the application's own routes.
  return router;
}
