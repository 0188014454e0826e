import express, { type Router } from 'express';
import type { GatewayContext } from './context.js';
import { ClientAuthenticator } from './client-auth.js';
import { action, formBody } from './form.js';
import { frontendHeaders, methodNotAllowed, noStore } from './http.js';
import { frontendErrorHandler, jsonErrorHandler } from './render-error.js';
import { bcAuthorize } from './bc-authorize.js';
import { tokenEndpoint } from './token.js';
import { metadata } from './discovery.js';
import type { Grant } from './grants/grant.js';
import { cibaGrant } from './grants/ciba.js';
import { authorizationCodeGrant } from './grants/authorization-code.js';
import { authorizeEndpoint } from './authorize.js';
import { ConsentPage } from './consent-page.js';
import { introspectionEndpoint } from './token-introspection.js';
import { revocationEndpoint } from './token-revocation.js';

/**
 * The gateway router: each endpoint is a declarative stack (headers, body, action), errors go to one renderer.
 * Mount it at the issuer's path.
 */
export function createRouter(ctx: GatewayContext): Router {
  const router = express.Router();
  const auth = new ClientAuthenticator(ctx.clients, ctx.realm);
  const form = formBody(ctx.bodyLimit);
  const grants: Grant[] = [cibaGrant, authorizationCodeGrant];
  const consentPage = new ConsentPage(ctx);

  // The frontend flow answers browsers: redirects and HTML pages, never JSON (except 405), from its own error handler.
  const frontend = express.Router();
  frontend
    .route('/authorize')
    .get(frontendHeaders, action(authorizeEndpoint(ctx, consentPage)))
    .all(frontendHeaders, methodNotAllowed('GET, HEAD'));
  frontend
    .route('/consent')
    .get(frontendHeaders, consentPage.session, action(consentPage.show))
    .post(frontendHeaders, ...form, consentPage.session, action(consentPage.decide))
    .all(frontendHeaders, methodNotAllowed('GET, HEAD, POST'));
  frontend.use(frontendErrorHandler(ctx.issuer, ctx.consentPage, ctx.onError));
  router.use(frontend);

  router
    .route('/bc-authorize')
    .post(noStore, ...form, action(bcAuthorize(ctx, auth)))
    .all(noStore, methodNotAllowed('POST'));
  router
    .route('/token')
    .post(noStore, ...form, action(tokenEndpoint(ctx, auth, grants)))
    .all(noStore, methodNotAllowed('POST'));

  router
    .route('/introspect')
    .post(noStore, ...form, action(introspectionEndpoint(ctx, auth)))
    .all(noStore, methodNotAllowed('POST'));
  router
    .route('/revoke')
    .post(noStore, ...form, action(revocationEndpoint(ctx, auth)))
    .all(noStore, methodNotAllowed('POST'));

  const discovery = express.Router();
  const document = metadata(ctx);
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    discovery
      .route(path)
      .get((_req, res) => {
        res.set('Cache-Control', 'public, max-age=300').json(document);
      })
      .all(methodNotAllowed('GET, HEAD'));
  }
  const keys = ctx.keys;
  if (keys) {
    // Public keys only (resolveKeySet exports them from the public halves).
    discovery
      .route('/jwks')
      .get((_req, res) => {
        res.set('Cache-Control', 'public, max-age=300').type('application/jwk-set+json').send(JSON.stringify(keys.jwks));
      })
      .all(methodNotAllowed('GET, HEAD'));
  }
  router.use(discovery);
  router.use(jsonErrorHandler(ctx.onError));
  return router;
}
