import type { Request, Response } from 'express';
import type { ClientAuthMethod, RegisteredClient } from '../../registry/clients.js';
import type { FormParams } from '../http/form.js';

/** What a credential check found: the client when the credentials hold; `known` whenever the client id is registered. */
export interface Verified {
  client?: RegisteredClient;
  known?: RegisteredClient;
}

/** The client id presented credentials name, or why they name none (reported in `client.authentication_failed`). */
export type Claim = { clientId: string } | { failure: 'missing' | 'malformed' };

/**
 * One client-authentication method (RFC 6749 §2.3, RFC 7523 §2.2), as a small module beside its peers. The
 * authenticator asks each method whether the request carries its credentials, refuses two at once, applies
 * the lock-out, and checks that the client is registered for the method that verified it.
 */
export interface ClientAuthMethodModule {
  readonly method: ClientAuthMethod;
  /** Whether the request carries this method's credentials at all (well formed or not). */
  presentedIn(req: Request, params: FormParams): boolean;
  /** The client id the credentials name, or why they name none. Cheap: no I/O, no crypto. */
  claim(req: Request, params: FormParams): Claim;
  /**
   * Checks the credentials against `registered`, what the registry found for the claimed id (looked up once by
   * the authenticator). Spends the same work for an unknown client id as for a known one.
   */
  verify(req: Request, res: Response, params: FormParams, registered: RegisteredClient | undefined): Promise<Verified>;
}
