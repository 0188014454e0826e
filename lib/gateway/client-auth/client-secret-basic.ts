import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Request, Response } from 'express';
import type { ClientRegistry, RegisteredClient } from '../../registry/clients.js';
import type { ClientAuthMethodModule, Verified } from './method.js';
import { verifySecret } from './client-secret.js';

/** RFC 6749 Appendix B: `+` is a space, then percent-decoding. Undefined when malformed. */
export function formDecode(value: string): string | undefined {
  // Most ids and secrets have nothing to decode.
  if (!value.includes('%') && !value.includes('+')) return value;
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

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

/** What passport is given in place of the Express request: the header the strategy reads, and what the registry found. */
interface PassportView {
  headers: { authorization: string | undefined };
  registered: RegisteredClient | undefined;
}

/** RFC 6749 §2.3.1 `client_secret_basic`: HTTP Basic, checked by passport with passport-http's strategy. */
export function clientSecretBasic(clients: ClientRegistry): ClientAuthMethodModule {
  const instance = new passport.Passport();
  /** The outcome of the strategy's check, handed from passport's callback back to `verify`. */
  const outcomes = new WeakMap<Request, Verified>();
  instance.use(
    // The strategy parsed the same header the authenticator's claim did, so `registered` is that id's registration.
    new ClientSecretBasicStrategy((req, _clientId, secret, done) => {
      verifySecret(clients, (req as unknown as PassportView).registered, secret).then((verified) => {
        outcomes.set(req, verified);
        done(null, verified.client ?? false);
      }, done);
    }),
  );
  return {
    method: 'client_secret_basic',
    presentedIn: (req) => req.headers.authorization !== undefined,
    claim: (req) => {
      const clientId = parseBasic(req.headers.authorization)?.clientId;
      return clientId === undefined ? { failure: 'malformed' } : { clientId };
    },
    verify: (req: Request, res: Response, _params, registered) =>
      new Promise((resolve, reject) => {
        // passport decorates the request it is given with its login helpers (six properties, on every call). Given
        // the Express request, those writes cost more than the rest of the check: they change the shape of an object
        // every later handler reads. It gets a small view instead, with the only thing the strategy reads.
        const view = { headers: { authorization: req.headers.authorization }, registered } satisfies PassportView as unknown as Request;
        const run = instance.authenticate('client_secret_basic', { session: false }, (error: unknown) => {
          if (error) reject(error);
          else resolve(outcomes.get(view) ?? {});
        }) as (req: Request, res: Response, next: (error?: unknown) => void) => void;
        run(view, res, reject);
      }),
  };
}
