import type { JWTPayload } from 'jose';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { OAuthErrorCode } from '../../errors.js';
import type { RegisteredClient } from '../../registry/clients.js';
import { FormParams } from './form.js';
import type { RedirectTarget } from './respond.js';

/** The parameters of a request whose reader has not run: none. FormParams only reads, so one serves every request. */
const NO_PARAMS = new FormParams(Object.freeze({}));

/**
 * One request to an endpoint of the router, in the spirit of node-oidc-provider's `ctx.oidc`: created by the
 * first handler of the endpoint's stack and filled in as the request is served. The stack's handlers take it as
 * their first argument (`action`); it lives on the response's `locals`, Express's own place for a request's state.
 */
export class RequestContext {
  /** The request's parameters: its form body (POST) or its query (GET), once the stack's reader has run. */
  params = NO_PARAMS;
  /** Base64url SHA-256 of the form body's bytes, kept when a DPoP proof came (its `camara:bh`). */
  bodyHash?: string;
  /** The client, once authenticated. */
  client: RegisteredClient | undefined;
  /** The JWT-bearer grant's assertion (RFC 7523), once verified. */
  assertion?: JWTPayload;
  /** The OAuth error the response was answered with, for the `request.completed` event's outcome. */
  answered: OAuthErrorCode | undefined;
  /**
   * Where the frontend flow's errors go once the client and its redirect_uri are known to be registered
   * (docs/protocol.md, frontend step 2); until then errors are the error page, never a redirect.
   */
  redirectTarget: RedirectTarget | undefined;
}

/** A symbol, so the application's own `res.locals` names (its templates read them) never meet the package's. */
const KEY = Symbol('express-netauth request');

type ContextLocals = Record<typeof KEY, RequestContext | undefined>;

/** First in every endpoint's stack: the request's context. */
export const beginRequest: RequestHandler = (_req, res, next) => {
  (res.locals as ContextLocals)[KEY] = new RequestContext();
  next();
};

/** The context `beginRequest` made; undefined for a response that reached no endpoint (an application's error). */
export function findRequestContext(res: Response): RequestContext | undefined {
  return (res.locals as Partial<ContextLocals> | undefined)?.[KEY];
}

function contextOf(res: Response): RequestContext {
  const request = findRequestContext(res);
  if (request === undefined) throw new TypeError('express-netauth: an endpoint handler ran before beginRequest');
  return request;
}

/** A handler of an endpoint's stack, given the request's context. */
export type ContextHandler = (request: RequestContext, req: Request, res: Response) => Promise<void>;

/** A step of an endpoint's stack that may finish the response or hand on, given the request's context. */
export type ContextStep = (request: RequestContext, req: Request, res: Response, next: NextFunction) => void;

/** Runs an async endpoint action with its request's context and hands any failure to the route's error renderer. */
export function action(handler: ContextHandler): RequestHandler {
  return (req, res, next) => {
    handler(contextOf(res), req, res).catch(next);
  };
}

/** A synchronous step with its request's context; a throw goes to the route's error renderer, as in Express. */
export function step(handler: ContextStep): RequestHandler {
  return (req, res, next) => {
    handler(contextOf(res), req, res, next);
  };
}
