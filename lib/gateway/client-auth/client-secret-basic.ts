import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Request, Response } from 'express';
import type { ClientRegistry, RegisteredClient } from '../../registry/clients.js';
import type { ClientAuthMethodModule, Verified } from './method.js';
import { verifySecret } from './client-secret.js';
import { formDecode } from '../http/form.js';

/** `Basic <base64(form-encoded id ":" form-encoded secret)>`, strictly. */
export function parseBasic(header: string | undefined): { clientId: string; secret: string } | undefined {
  if (header === undefined) return undefined;
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const clientId = formDecode(decoded.slice(0, colon));
  const secret = formDecode(decoded.slice(colon + 1));
  if (!clientId || !secret) return undefined;
  return { clientId, secret };
}

type Verify = (req: Request, clientId: string, secret: string, done: (error: unknown, client?: RegisteredClient | false) => void) => void;

// passport augments strategies with these at authenticate() time; @types/passport-http does not declare them.
interface ClientSecretBasicStrategy {
  fail(status: number): void;
  error(error: Error): void;
  success(client: RegisteredClient): void;
}

/**
 * passport-http's Basic strategy with RFC 6749 §2.3.1 decoding: the header is split on the FIRST colon
 * (passport-http splits on every colon, cutting secrets short) and both halves are form-decoded, so
 * openid-client's ClientSecretBasic, which percent-encodes `-`, `_`, `.` and more, authenticates.
 */
class ClientSecretBasicStrategy extends BasicStrategy {
  private readonly verifyClient: Verify;

  constructor(verify: Verify) {
    super({ passReqToCallback: true }, verify as never);
    this.name = 'client_secret_basic';
    this.verifyClient = verify;
  }

  override authenticate(req: Request): void {
    const credentials = parseBasic(req.headers.authorization);
    if (!credentials) {
      this.fail(400);
      return;
    }
    this.verifyClient(req, credentials.clientId, credentials.secret, (error, client) => {
      if (error) this.error(error as Error);
      else if (!client) this.fail(401);
      else this.success(client);
    });
  }
}

/**
 * What passport is given in place of the Express request: the header the strategy reads, what the registry found,
 * and, once the strategy has run, the outcome of its check.
 */
interface PassportView {
  headers: { authorization: string | undefined };
  registered: RegisteredClient | undefined;
  outcome: Verified | undefined;
}

/** How `authenticate(name, options, callback)` answers: passport's custom-callback signature. */
type Callback = (error: unknown, user?: unknown, info?: unknown, status?: unknown) => void;

/** A strategy as passport runs it: the prototype of one instance per request, which gets the action functions. */
interface RunnableStrategy {
  authenticate(req: unknown, options?: unknown): void;
}

/**
 * Runs a strategy for one request as passport's Connect middleware does (passport-strategy's contract): an instance
 * made from the registered one, given `success`, `fail`, `error`, `redirect` and `pass`, then `authenticate`. Every
 * outcome goes to the callback. A module-level function: the action functions close over its arguments only.
 */
function runStrategy(prototype: RunnableStrategy, req: unknown, options: unknown, callback: Callback): void {
  const strategy = Object.create(prototype) as RunnableStrategy & Record<'success' | 'fail' | 'error' | 'redirect' | 'pass', unknown>;
  strategy.success = (user: unknown, info: unknown) => callback(null, user, info);
  strategy.fail = (challenge: unknown, status: unknown) => callback(null, false, challenge, status);
  strategy.error = (error: unknown) => callback(error);
  strategy.redirect = () => callback(new Error('client authentication does not redirect'));
  strategy.pass = () => callback(null, false);
  strategy.authenticate(req, options);
}

/**
 * passport's framework hook (`Passport.framework()`, the way passport adapts to a framework other than Connect),
 * for client authentication: `authenticate(name, options, callback)` runs the named strategy with `runStrategy`
 * and answers through the callback only. What it leaves out is what the Connect middleware adds for login
 * sessions: the helpers it writes onto every request (`login`, `logout`, `isAuthenticated` ...), the session
 * manager, flash messages, redirects and its own 401 answers; a token endpoint has none of them. Measured in
 * the bench's server with rate limits off, that middleware cost ~40 us per request and raised the collector's
 * share from 14 % to 21 % of the server's time; with the default rate limits on, the two ran alike
 * (bench/README.md).
 */
function callbackFramework(strategies: ReadonlyMap<string, RunnableStrategy>): passport.Framework {
  return {
    initialize: () => (_req: unknown, _res: unknown, next: () => void) => next(),
    authenticate: (_passport, name, options, callback) => {
      const prototype = strategies.get(name);
      if (prototype === undefined || callback === undefined) throw new Error(`passport: ${name} is not a strategy this framework runs with a callback`);
      return (req: unknown) => runStrategy(prototype, req, options, callback);
    },
  };
}

/** RFC 6749 §2.3.1 `client_secret_basic`: HTTP Basic, checked by passport with passport-http's strategy. */
export function clientSecretBasic(clients: ClientRegistry): ClientAuthMethodModule {
  // The strategy parsed the same header the authenticator's claim did, so `registered` is that id's registration.
  const strategy = new ClientSecretBasicStrategy((req, _clientId, secret, done) => {
    const view = req as unknown as PassportView;
    verifySecret(clients, view.registered, secret).then((verified) => {
      view.outcome = verified;
      done(null, verified.client ?? false);
    }, done);
  });
  const instance = new passport.Passport();
  instance.use(strategy);
  instance.framework(callbackFramework(new Map([[strategy.name, strategy]])));
  return {
    method: 'client_secret_basic',
    presentedIn: (req) => req.headers.authorization !== undefined,
    claim: (req) => {
      const clientId = parseBasic(req.headers.authorization)?.clientId;
      return clientId === undefined ? { failure: 'malformed' } : { clientId };
    },
    verify: (req: Request, _res: Response, _params, registered) =>
      new Promise((resolve, reject) => {
        // The strategy reads the Authorization header and nothing else of the request, so it gets a small view with
        // that header (and the registration found), on which the outcome of its check comes back.
        const view: PassportView = { headers: { authorization: req.headers.authorization }, registered, outcome: undefined };
        const run = instance.authenticate(strategy.name, { session: false }, (error: unknown) => {
          if (error) reject(error);
          else resolve(view.outcome ?? {});
        }) as (req: unknown) => void;
        run(view);
      }),
  };
}
