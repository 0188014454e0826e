import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Request, Response } from 'express';
import type { ClientRegistry } from '../../registry/clients.js';
import type { ClientAuthMethodModule, Unreadable, Verified } from './method.js';
import { verifySecret } from './client-secret.js';
import { formDecode } from '../http/form.js';

/**
 * The secret of Basic credentials: everything after the first colon (RFC 7617 §2). passport-http splits the
 * decoded credentials on every colon and hands over the part before a second one (jaredhanson/passport-http#20),
 * which would cut short a secret sent with a raw colon; the rest is taken from the header it decoded.
 */
function wholeSecret(req: Request, userid: string): string {
  const token = req.headers.authorization?.split(' ')[1] ?? '';
  return Buffer.from(token, 'base64')
    .toString()
    .slice(userid.length + 1);
}

/**
 * RFC 6749 §2.3.1 `client_secret_basic`: HTTP Basic, read by passport with passport-http's `BasicStrategy`. Its
 * verify callback form-decodes both halves (Appendix B: openid-client's ClientSecretBasic percent-encodes `-`, `_`,
 * `.` and more; passport-http does not decode them), then checks the secret through the authenticator's attempt
 * (one registry lookup, the lock-out, a constant-time comparison, a decoy for unknown ids). No session: the client
 * authenticates every request. passport's custom callback hands the outcome back, so the authenticator renders
 * the OAuth error. The strategy is made per request: its verify callback closes over that request's attempt.
 */
export function clientSecretBasic(clients: ClientRegistry): ClientAuthMethodModule {
  const authenticator = new passport.Passport();
  return {
    method: 'client_secret_basic',
    presentedIn: (req) => req.headers.authorization !== undefined,
    authenticate: (req: Request, res: Response, _params, attempt) =>
      new Promise<Verified | Unreadable>((resolve, reject) => {
        // What the verify callback found; passport-http reports every failure alike (a challenge), so a header it
        // refused before calling it (another scheme, no colon, an empty half) stays `malformed`.
        let outcome: Verified | Unreadable = { failure: 'malformed' };
        const strategy = new BasicStrategy({ passReqToCallback: true }, (request, userid, _password, done) => {
          const clientId = formDecode(userid);
          const secret = formDecode(wholeSecret(request, userid));
          // A malformed %-sequence is a failed authentication, not an error.
          if (clientId === undefined || secret === undefined) {
            done(null, false);
            return;
          }
          attempt(clientId, (registered) => verifySecret(clients, registered, secret)).then((verified) => {
            outcome = verified;
            done(null, verified.client ?? false);
          }, done);
        });
        const middleware = authenticator.authenticate(strategy, { session: false }, (error: unknown) => {
          if (error) reject(error);
          else resolve(outcome);
        }) as (req: Request, res: Response, next: (error?: unknown) => void) => void;
        middleware(req, res, reject);
      }),
  };
}
