import { performance } from 'node:perf_hooks';
import express, { type RequestHandler, type Router } from 'express';
import type { GatewayContext } from './context.js';
import { ClientAuthenticator } from './client-auth.js';
import { action, formBody } from './form.js';
import { frontendHeaders, methodNotAllowed, noStore } from './http.js';
import { answeredError, frontendErrorHandler, jsonErrorHandler } from './render-error.js';
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
import type { Endpoint, EventHub } from './events.js';
import type { GrantType } from '../registry/clients.js';

/**
 * First in every endpoint's stack: times the request for the `request.completed` event. With nobody
 * listening it does nothing but one property read.
 */
function observe(events: EventHub, endpoint: Endpoint, grantTypes?: ReadonlySet<string>): RequestHandler {
  return (req, res, next) => {
    if (!events.has('request.completed')) {
      next();
      return;
    }
    const start = performance.now();
    // 'close' comes after 'finish', and also when the connection is cut before the response ends.
    res.once('close', () => {
      const status = res.statusCode;
      const grantType: unknown = grantTypes && (req.body as Record<string, unknown> | undefined)?.grant_type;
      events.emit('request.completed', {
        endpoint,
        method: req.method,
        status,
        outcome: answeredError(res) ?? (status < 400 ? 'ok' : status >= 500 ? 'server_error' : 'invalid_request'),
        ...(typeof grantType === 'string' && grantTypes?.has(grantType) ? { grantType: grantType as GrantType } : {}),
        durationMs: performance.now() - start,
      });
    });
    next();
  };
}

/**
 * The gateway router: each endpoint is a declarative stack (headers, body, action), errors go to one renderer.
 * Mount it at the issuer's path.
 */
export function createRouter(ctx: GatewayContext): Router {
  const router = express.Router();
  const auth = new ClientAuthenticator(ctx.clients, ctx.realm, { events: ctx.events, ...(ctx.limits ? { limits: ctx.limits } : {}) });
  const form = formBody(ctx.bodyLimit);
  const grants: Grant[] = [cibaGrant, authorizationCodeGrant];
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
  const document = metadata(ctx);
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    discovery
      .route(path)
      .all(on('discovery'))
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
      .all(on('jwks'))
      .get((_req, res) => {
        res.set('Cache-Control', 'public, max-age=300').type('application/jwk-set+json').send(JSON.stringify(keys.jwks));
      })
      .all(methodNotAllowed('GET, HEAD'));
  }
  router.use(discovery);
  router.use(jsonErrorHandler(ctx.onError));
  return router;
}
