import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import type { GatewayContext } from './context.js';
import { ClientAuthenticator } from './client-auth/authenticator.js';
import { formBody, queryForm } from './http/read-params.js';
import { frontendHeaders, methodNotAllowed, noStore } from './http/respond.js';
import { frontendErrorHandler, jsonErrorHandler } from './http/render-error.js';
import { observe } from './http/observe.js';
import { action, beginRequest } from './http/request-context.js';
import { bcAuthorize } from './endpoints/bc-authorize.js';
import { tokenEndpoint } from './endpoints/token.js';
import { discoveryEndpoint } from './endpoints/discovery.js';
import { jwksEndpoint } from './endpoints/jwks.js';
import { grants } from './grants/index.js';
import { authorizeEndpoint } from './endpoints/authorize.js';
import { ConsentPage } from './endpoints/consent-page.js';
import { SubscriberConsentsPage } from './endpoints/consents-page.js';
import { introspectionEndpoint } from './endpoints/introspection.js';
import { revocationEndpoint } from './endpoints/revocation.js';
import type { Endpoint } from '../ops/events.js';

/** One endpoint's stacks, after its request context and observer: what every method runs, then per method. */
interface EndpointStacks {
  /** Run first for every method (response headers). */
  all?: RequestHandler[];
  /** GET, and HEAD as in Express. */
  get?: RequestHandler[];
  post?: RequestHandler[];
  /** The `Allow` header of the 405 every other method gets. */
  allow: string;
}

/**
 * The gateway router: each endpoint is an express.Router route (case-insensitive, one trailing slash optional,
 * HEAD where GET is served) whose stack begins the request's context and observes it, reads its parameters and
 * runs its action; any other method is answered 405, and errors go to the route's renderer (JSON, or the
 * frontend flow's redirects and pages). Paths that name no endpoint go on to the application. Mount it at the
 * issuer's path.
 */
export function createRouter(ctx: GatewayContext): Router {
  const router = express.Router();
  router.use(mountCheck(ctx));
  const auth = new ClientAuthenticator(ctx.clients, ctx.realm, {
    events: ctx.events,
    sourceLabel: ctx.sourceLabel,
    ...(ctx.limits ? { limits: ctx.limits } : {}),
    ...(ctx.countersOnStore ? { storeUnavailable: ctx.storeUnavailable } : {}),
    assertions: { jwts: ctx.clientJwts, issuer: ctx.issuer },
  });
  const form = formBody(ctx.bodyLimit);
  const consentPage = new ConsentPage(ctx);
  const json = jsonErrorHandler(ctx.onError, ctx.storeUnavailable);
  // The frontend flow answers browsers: redirects and HTML pages, never JSON (except 405), from its own error handler.
  const page = frontendErrorHandler(ctx.issuer, ctx.consentPage, ctx.onError, ctx.storeUnavailable);

  function endpoint(
    path: string,
    name: Endpoint,
    errors: ErrorRequestHandler,
    stacks: EndpointStacks,
    observer = observe(ctx.events, name),
  ): void {
    const route = router.route(path).all(beginRequest, observer, ...(stacks.all ?? []));
    if (stacks.get) route.get(...stacks.get);
    if (stacks.post) route.post(...stacks.post);
    route.all(methodNotAllowed(stacks.allow), errors);
  }
  /** A client-authenticated JSON endpoint: POST with a form body, never cached. */
  function post(path: string, name: Endpoint, handler: RequestHandler, observer?: RequestHandler): void {
    endpoint(path, name, json, { all: [noStore], post: [form, handler], allow: 'POST' }, observer);
  }

  // Express tests a request's path against each route in turn: the most requested endpoints come first (token in
  // every flow and every CIBA poll, then bc-authorize and authorize, which open a flow).
  const grantTypes = new Set<string>(grants.map((g) => g.type));
  post('/token', 'token', action(tokenEndpoint(ctx, auth, grants)), observe(ctx.events, 'token', grantTypes));
  post('/bc-authorize', 'bc-authorize', action(bcAuthorize(ctx, auth)));
  endpoint('/authorize', 'authorize', page, {
    all: [frontendHeaders],
    get: [queryForm, action(authorizeEndpoint(ctx, consentPage))],
    allow: 'GET, HEAD',
  });
  endpoint('/consent', 'consent', page, {
    all: [frontendHeaders],
    get: [queryForm, consentPage.session, action(consentPage.show)],
    post: [form, consentPage.session, action(consentPage.decide)],
    allow: 'GET, HEAD, POST',
  });
  const consents = new SubscriberConsentsPage(ctx, consentPage.session);
  endpoint('/consents', 'consents', page, {
    all: [frontendHeaders],
    get: [consents.session, action(consents.show)],
    post: [form, consents.session, action(consents.withdraw)],
    allow: 'GET, HEAD, POST',
  });
  post('/introspect', 'introspect', action(introspectionEndpoint(ctx, auth)));
  post('/revoke', 'revoke', action(revocationEndpoint(ctx, auth)));
  const document = discoveryEndpoint(ctx);
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    endpoint(path, 'discovery', json, { get: [document], allow: 'GET, HEAD' });
  }
  endpoint('/jwks', 'jwks', json, { get: [jwksEndpoint(ctx.keys)], allow: 'GET, HEAD' });

  // Errors handed to the router by the application's own middleware before it.
  router.use(json);
  return router;
}

/**
 * The router answers at the issuer's path only if it is mounted there: otherwise discovery publishes endpoints
 * that are not where the router answers, and every error points back at them. The mount point is known at the
 * first request (`req.baseUrl`), so it is checked then, once, and a mismatch is a warning naming both paths.
 */
function mountCheck(ctx: GatewayContext): RequestHandler {
  const issuerPath = new URL(ctx.issuer).pathname.replace(/\/$/, '');
  let checked = false;
  return (req, _res, next) => {
    if (!checked) {
      checked = true;
      // Express matches routes case-insensitively by default, so a request may name the mount point in any case.
      if (req.baseUrl.toLowerCase() !== issuerPath.toLowerCase()) {
        ctx.warn({
          option: 'issuer',
          code: 'NETAUTH_MOUNT_PATH_MISMATCH',
          message:
            `the router is mounted at '${req.baseUrl || '/'}' but the issuer ${ctx.issuer} has the path ` +
            `'${issuerPath || '/'}': discovery names endpoints where the router does not answer. Mount it with ` +
            `app.use('${issuerPath || '/'}', netauth.router), or give the issuer the mount path (said once; ignore ` +
            'it only if a proxy in front rewrites the path).',
        });
      }
    }
    next();
  };
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
    .all(beginRequest, observe(ctx.events, 'discovery'))
    .get(discoveryEndpoint(ctx))
    .all(methodNotAllowed('GET, HEAD'));
  // No error handler here: mounted at the root, it would also catch the errors of the application's own routes.
  return router;
}
