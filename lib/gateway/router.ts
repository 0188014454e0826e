import express, { type Router } from 'express';
import type { GatewayContext } from './context.js';
import { ClientAuthenticator } from './client-auth/authenticator.js';
import { action, formBody } from './http/form.js';
import { frontendHeaders, methodNotAllowed, noStore } from './http/headers.js';
import { frontendErrorHandler, jsonErrorHandler } from './http/render-error.js';
import { observe } from './http/observe.js';
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
 * The gateway router: each endpoint is a declarative stack (headers, body, action), errors go to one renderer.
 * Mount it at the issuer's path.
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

  // The frontend flow answers browsers: redirects and HTML pages, never JSON (except 405), from its own error handler.
  const frontend = express.Router();
  frontend
    .route('/authorize')
    .all(on('authorize'))
    .get(frontendHeaders, action(authorizeEndpoint(ctx, consentPage)))
    .all(frontendHeaders, methodNotAllowed('GET, HEAD'));
  frontend
    .route('/consent')
    .all(on('consent'))
    .get(frontendHeaders, consentPage.session, action(consentPage.show))
    .post(frontendHeaders, ...form, consentPage.session, action(consentPage.decide))
    .all(frontendHeaders, methodNotAllowed('GET, HEAD, POST'));
  frontend.use(frontendErrorHandler(ctx.issuer, ctx.consentPage, ctx.onError));
  router.use(frontend);

  router
    .route('/bc-authorize')
    .all(on('bc-authorize'))
    .post(noStore, ...form, action(bcAuthorize(ctx, auth)))
    .all(noStore, methodNotAllowed('POST'));
  router
    .route('/token')
    .all(observe(events, 'token', new Set(grants.map((g) => g.type))))
    .post(noStore, ...form, action(tokenEndpoint(ctx, auth, grants)))
    .all(noStore, methodNotAllowed('POST'));

  router
    .route('/introspect')
    .all(on('introspect'))
    .post(noStore, ...form, action(introspectionEndpoint(ctx, auth)))
    .all(noStore, methodNotAllowed('POST'));
  router
    .route('/revoke')
    .all(on('revoke'))
    .post(noStore, ...form, action(revocationEndpoint(ctx, auth)))
    .all(noStore, methodNotAllowed('POST'));

  const discovery = express.Router();
  const document = discoveryEndpoint(ctx);
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    discovery.route(path).all(on('discovery')).get(document).all(methodNotAllowed('GET, HEAD'));
  }
  if (ctx.keys) discovery.route('/jwks').all(on('jwks')).get(jwksEndpoint(ctx.keys)).all(methodNotAllowed('GET, HEAD'));
  router.use(discovery);
  router.use(jsonErrorHandler(ctx.onError));
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
