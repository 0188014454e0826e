import type { Request } from 'express';
import type { Session, SessionData } from 'express-session';
import type { TokenEndpointResponse } from 'openid-client';
import { NetAuthClientError } from './errors.js';

/** The token as the application keeps it in its session. */
export interface SessionToken {
  access_token: string;
  token_type: string;
  /**
   * Epoch ms; undefined when the gateway did not say (`expires_in` is only RECOMMENDED, RFC 6749 §5.1): the
   * token is then used until the service API refuses it.
   */
  expires_at: number | undefined;
  /** The granted scope; the requested one when the gateway did not echo it (RFC 6749 §5.1: then they are identical). */
  scope: string | undefined;
  /** The application data given to `start`. */
  data: Record<string, unknown> | undefined;
}

/** Epoch ms at which a token answer's `expires_in` runs out; undefined when the gateway did not say. */
export function expiryOf(expiresIn: number | undefined, receivedAt: number): number | undefined {
  return expiresIn === undefined ? undefined : receivedAt + expiresIn * 1000;
}

/**
 * A token answer as the session keeps it. `scope`: the one asked for, which stands in when the answer has none
 * (RFC 6749 §5.1: the granted scope is then the requested one).
 */
export function sessionTokenOf(
  response: TokenEndpointResponse,
  receivedAt: number,
  scope: string | undefined,
  data: SessionToken['data'],
): SessionToken {
  return {
    access_token: response.access_token,
    token_type: response.token_type,
    expires_at: expiryOf(response.expires_in, receivedAt),
    scope: response.scope ?? scope,
    data,
  };
}

/** A flow started by this session and not yet called back. */
export interface PendingAuthorization {
  state: string;
  code_verifier: string;
  nonce: string | undefined;
  scope: string;
  data: Record<string, unknown> | undefined;
  returnTo: string | undefined;
  /** Started by `requireToken()`: the token must cover `scope`, or the route would start the flow again forever. */
  required?: boolean;
}

declare module 'express-session' {
  interface SessionData {
    netauth?: {
      token?: SessionToken;
      /**
       * Kept beside the token, not in it: the application never handles it. `requireToken()` and `fetch()` use
       * it before the token expires and store the rotated one; logout revokes it.
       */
      refresh_token?: string;
      /** Keyed by state, so two tabs can run flows side by side. */
      pending?: Record<string, PendingAuthorization>;
    };
  }
}

type AppSession = Session & Partial<SessionData>;

const NO_SESSION =
  'express-netauth/client needs express-session mounted before it: add app.use(session({ secret, resave: false, saveUninitialized: false })) ' +
  'ahead of netauth.start(), .callback(), .requireToken(), .logout() and every route that calls netauth.token() or netauth.fetch() ' +
  '(with several instances, give it a shared store such as connect-redis)';

/** The request's express-session, or a `misconfigured` error naming the fix (at the first request: a mount order cannot be seen earlier). */
export function sessionOf(req: Request): AppSession {
  const session = (req as Request & { session?: AppSession }).session;
  if (!session) throw new NetAuthClientError('misconfigured', NO_SESSION);
  if (typeof session.regenerate !== 'function' || typeof session.save !== 'function') {
    // cookie-session (and similar) set req.session without regenerate(): the session id could not be renewed at login.
    throw new NetAuthClientError(
      'misconfigured',
      `req.session is not an express-session (no regenerate()/save()): ${NO_SESSION}`,
    );
  }
  return session;
}

/**
 * express-session sends no `secure` cookie over plain HTTP, silently: the browser would come back to the
 * callback without its session and the flow would end in `state_mismatch`. Say so where it starts instead.
 * (With X-Forwarded-Proto present, express-session may trust it through its own `proxy` option: no verdict.)
 */
export function checkSessionCookie(req: Request, session: Session): void {
  if (session.cookie?.secure === true && !req.secure && req.headers['x-forwarded-proto'] === undefined) {
    throw new NetAuthClientError(
      'misconfigured',
      "the session cookie is `secure` but this request is plain HTTP, so express-session will not send it and the callback would fail with state_mismatch. Serve the application over HTTPS (behind a TLS proxy, set Express 'trust proxy'), or for http://localhost development set express-session's cookie.secure to false.",
    );
  }
}

export interface TokenState extends SessionToken {
  expired: boolean;
}

/** The session's token, and whether it has expired; undefined when there is none. */
export function getToken(req: Request, now: number): TokenState | undefined {
  const token = sessionOf(req).netauth?.token;
  return token
    ? {
        ...token,
        expires_at: token.expires_at ?? undefined,
        expired: token.expires_at != null && token.expires_at <= now,
      }
    : undefined;
}

/** The session's live token, or a typed error saying why there is none. */
export function liveToken(req: Request, now: number): SessionToken {
  const token = getToken(req, now);
  if (!token) throw new NetAuthClientError('no_token', 'no access token in this session');
  if (token.expired) throw new NetAuthClientError('token_expired', 'the access token in this session has expired');
  return token;
}

/** Whether a granted scope covers a requested one: every requested scope token is granted (`openid` and `offline_access` aside). */
export function covers(granted: string | undefined, requested: string): boolean {
  const have = new Set((granted ?? '').split(' '));
  return requested
    .split(' ')
    .every((part) => part === '' || part === 'openid' || part === 'offline_access' || have.has(part));
}

/** Runs a session-store operation; a store failure is `unavailable`, without the store's own error details. */
export function promisify(fn: (cb: (err?: unknown) => void) => void): Promise<void> {
  return new Promise((resolve, reject) =>
    fn((err) =>
      err ? reject(new NetAuthClientError('unavailable', 'the session store failed', { cause: err })) : resolve(),
    ),
  );
}
