import type { Request } from 'express';
import type { Session, SessionData } from 'express-session';
import { NetAuthClientError } from './errors.js';

/** The token as the application keeps it in its session. */
export interface SessionToken {
  access_token: string;
  token_type: string;
  /** Epoch ms. */
  expires_at: number;
  scope: string | undefined;
  /** The application data given to `start`. */
  data: Record<string, unknown> | undefined;
}

/** A flow started by this session and not yet called back. */
export interface PendingAuthorization {
  state: string;
  code_verifier: string;
  nonce: string | undefined;
  scope: string;
  data: Record<string, unknown> | undefined;
  returnTo: string | undefined;
}

declare module 'express-session' {
  interface SessionData {
    netauth?: {
      token?: SessionToken;
      /** Keyed by state, so two tabs can run flows side by side. */
      pending?: Record<string, PendingAuthorization>;
    };
  }
}

type WithSession = Request & { session: Session & Partial<SessionData> };

export function sessionOf(req: Request): WithSession['session'] {
  const session = (req as Partial<WithSession>).session;
  if (!session) throw new TypeError('express-netauth/client needs express-session mounted before it');
  return session;
}

/**
 * express-session sends no `secure` cookie over plain HTTP, silently: the browser would come back to the
 * callback without its session and the flow would end in `state_mismatch`. Say so where it starts instead.
 * (With X-Forwarded-Proto present, express-session may trust it through its own `proxy` option: no verdict.)
 */
export function checkSessionCookie(req: Request, session: Session): void {
  if (session.cookie?.secure === true && !req.secure && req.headers['x-forwarded-proto'] === undefined) {
    throw new Error(
      "express-netauth/client: the session cookie is `secure` but this request is plain HTTP, so express-session will not send it and the callback would fail with state_mismatch. Serve the application over HTTPS (behind a TLS proxy, set Express 'trust proxy'), or for http://localhost development set express-session's cookie.secure to false.",
    );
  }
}

export interface TokenState extends SessionToken {
  expired: boolean;
}

/** The session's token, and whether it has expired; undefined when there is none. */
export function getToken(req: Request, now: number = Date.now()): TokenState | undefined {
  const token = sessionOf(req).netauth?.token;
  return token ? { ...token, expired: token.expires_at <= now } : undefined;
}

/** The session's live token, or a typed error saying why there is none. */
export function requireToken(req: Request, now: number = Date.now()): SessionToken {
  const token = getToken(req, now);
  if (!token) throw new NetAuthClientError('no_token', 'no access token in this session');
  if (token.expired) throw new NetAuthClientError('token_expired', 'the access token in this session has expired');
  return token;
}

export function promisify(fn: (cb: (err?: unknown) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => fn((err) => (err ? reject(err) : resolve())));
}
