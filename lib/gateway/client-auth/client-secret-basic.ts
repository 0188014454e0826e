import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Request, Response } from 'express';
import type { ClientRegistry } from '../../registry/clients.js';
import type { Attempt, ClientAuthMethodModule, Unreadable, Verified } from './method.js';
import { verifySecret } from './client-secret.js';
import { formDecode } from '../http/form.js';

/**
 * What passport authenticates: the request's headers, and this attempt's state for the verify callback. passport
 * decorates the object it is given with session helpers (`login`, `logout`, `isAuthenticated`, its session
 * manager) that a session-less client authentication never uses; on Express's request each added property
 * costs a hidden-class change (bench/README.md), so it gets this view, which passport-http's strategy reads alike.
 */
interface BasicCredentials {
  headers: Request['headers'];
  /** The request, whose address (`req.ip`) ranks the secret check in the scrypt queue: read only then. */
  req: Pick<Request, 'ip'>;
  attempt: Attempt;
  /** What the verify callback found; a header passport-http refused before calling it stays `malformed`. */
  outcome: Verified | Unreadable;
}

/**
 * The secret of Basic credentials: everything after the first colon (RFC 7617 §2). passport-http splits the
 * decoded credentials on every colon and hands over the part before a second one (jaredhanson/passport-http#20),
 * which would cut short a secret sent with a raw colon; the rest is taken from the header it decoded.
 */
function wholeSecret(credentials: BasicCredentials, userid: string): string {
  const token = credentials.headers.authorization?.split(' ')[1] ?? '';
  return Buffer.from(token, 'base64')
    .toString()
    .slice(userid.length + 1);
}

/**
 * RFC 6749 §2.3.1 `client_secret_basic`: HTTP Basic, read by passport with passport-http's `BasicStrategy`, made
 * once and registered on a Passport of the package's own. Its verify callback form-decodes both halves
 * (Appendix B: openid-client's ClientSecretBasic percent-encodes `-`, `_`, `.` and more; passport-http does not
 * decode them), then checks the secret through the authenticator's attempt (one registry lookup, the lock-out, a
 * constant-time comparison, a decoy for unknown ids). No session: the client authenticates every request.
 * passport's custom callback hands the outcome back, so the authenticator renders the OAuth error.
 */
export function clientSecretBasic(clients: ClientRegistry): ClientAuthMethodModule {
  const authenticator = new passport.Passport();
  authenticator.use(
    'client_secret_basic',
    new BasicStrategy({ passReqToCallback: true }, (request, userid, _password, done) => {
      const credentials = request as unknown as BasicCredentials;
      const clientId = formDecode(userid);
      const secret = formDecode(wholeSecret(credentials, userid));
      // A malformed %-sequence is a failed authentication, not an error.
      if (clientId === undefined || secret === undefined) {
        done(null, false);
        return;
      }
      credentials
        .attempt(clientId, (registered) =>
          verifySecret(clients, { clientId, req: credentials.req }, registered, secret),
        )
        .then((verified) => {
          credentials.outcome = verified;
          done(null, verified.client ?? false);
        }, done);
    }),
  );
  return {
    method: 'client_secret_basic',
    presentedIn: (req) => req.headers.authorization !== undefined,
    authenticate: (req: Request, res: Response, _params, attempt) =>
      new Promise<Verified | Unreadable>((resolve, reject) => {
        const credentials: BasicCredentials = {
          headers: req.headers,
          req,
          attempt,
          outcome: { failure: 'malformed' },
        };
        const middleware = authenticator.authenticate('client_secret_basic', { session: false }, (error: unknown) => {
          if (error) reject(error);
          else resolve(credentials.outcome);
        }) as (req: BasicCredentials, res: Response, next: (error?: unknown) => void) => void;
        middleware(credentials, res, reject);
      }),
  };
}
