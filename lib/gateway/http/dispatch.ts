import type { ErrorRequestHandler, Request, RequestHandler } from 'express';

/**
 * One endpoint of the router: a declarative stack of handlers per method, the stack every other method gets
 * (a 405), and the error renderer of its kind (JSON, or the frontend flow's redirects and pages).
 */
export interface EndpointRoute {
  /** Lower case, under the issuer's path, e.g. `/token`. */
  path: string;
  /** GET also answers HEAD, as in Express. */
  methods: Partial<Record<'GET' | 'POST', readonly RequestHandler[]>>;
  otherwise: readonly RequestHandler[];
  errors: ErrorRequestHandler;
}

/**
 * The path a request names under the router's mount point, as the routes are keyed: Express's default routing
 * (case-insensitive, one trailing slash optional), so `/Token/` reaches `/token` as it did through express.Router.
 */
export function routePath(req: Request): string {
  const path = req.path.toLowerCase();
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * The router's one layer: finds the endpoint by path (one Map lookup) and runs its stack. Express's Router would
 * match every handler of every route against the path in turn, with several layers per endpoint; the stacks are
 * the same handlers, run in the same order, with Express's semantics (a handler that calls `next()` hands on to the
 * next; when a method's stack falls through, the 405 stack runs; an error, passed or thrown, goes to the route's
 * renderer). A path that names no endpoint goes on to the application.
 */
export function dispatch(routes: readonly EndpointRoute[]): RequestHandler {
  const table = new Map(routes.map((route) => [route.path, route]));
  return (req, res, next) => {
    const route = table.get(routePath(req));
    if (route === undefined) {
      next();
      return;
    }
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const stack = method === 'GET' || method === 'POST' ? route.methods[method] : undefined;
    const fail = (error: unknown): void => {
      void route.errors(error, req, res, next);
    };
    const otherwise = (): void => run(route.otherwise, req, res, next, fail);
    if (stack === undefined) otherwise();
    else run(stack, req, res, otherwise, fail);
  };
}

/** Runs `stack` in order: `done` when the last handler calls next(), `fail` on an error (passed to next or thrown). */
function run(stack: readonly RequestHandler[], req: Request, res: Parameters<RequestHandler>[1], done: () => void, fail: (error: unknown) => void): void {
  let index = 0;
  const next = (error?: unknown): void => {
    if (error !== undefined && error !== null) {
      fail(error);
      return;
    }
    const handler = stack[index++];
    if (handler === undefined) {
      done();
      return;
    }
    try {
      handler(req, res, next);
    } catch (thrown) {
      fail(thrown);
    }
  };
  next();
}
