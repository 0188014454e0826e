import type { Request, Response } from 'express';
import type { JWTPayload } from 'jose';
import type { OAuthError } from '../../errors.js';
import type { ClientAuthMethod, RegisteredClient } from '../../registry/clients.js';
import type { FormParams } from '../http/form.js';

/** What a credential check found: the client when the credentials hold; `known` whenever the client id is registered. */
export interface Verified {
  client?: RegisteredClient;
  known?: RegisteredClient;
  /** The JWT bearer grant's assertion, when it is what authenticated the client: its verified claims. */
  assertion?: JWTPayload;
  /** The answer to credentials that do not hold, where the method's protocol names another than 401 invalid_client. */
  refusal?: OAuthError;
}

/** Presented credentials that name no client, and why (reported in `client.authentication_failed`). */
export interface Unreadable {
  failure: 'missing' | 'malformed';
}

/** Checks the credentials against what the registry found for the id they claim (`undefined`: no such client). */
export type Check = (registered: RegisteredClient | undefined) => Promise<Verified>;

/**
 * The authenticator's part of one attempt, for the client id the credentials claim: it asks the registry once,
 * applies the lock-out (a locked id and address is answered 429 before anything is compared), runs `check` on
 * what the registry found, and keeps the client only if it used the method it is registered for.
 */
export type Attempt = (clientId: string, check: Check) => Promise<Verified>;

/**
 * One client-authentication method (RFC 6749 §2.3, RFC 7523 §2.2), as a small module beside its peers. The
 * authenticator asks each method whether the request carries its credentials, refuses two at once, and hands
 * the one presented an `Attempt`, through which the method checks the credentials once it knows the id they claim.
 */
export interface ClientAuthMethodModule {
  readonly method: ClientAuthMethod;
  /** Whether the request carries this method's credentials at all (well formed or not). */
  presentedIn(req: Request, params: FormParams): boolean;
  /**
   * Reads the credentials; when they name a client, checks them through `attempt` (spending the same work for an
   * unknown client id as for a known one) and resolves with what it found.
   */
  authenticate(req: Request, res: Response, params: FormParams, attempt: Attempt): Promise<Verified | Unreadable>;
}
