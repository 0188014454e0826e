import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import type { ClientAuthMethod, ClientRegistry, RegisteredClient } from '../../registry/clients.js';
import type { FormParams } from '../http/form.js';
import type { ClientAuthenticationFailedEvent, Endpoint, EventHub } from '../../ops/events.js';
import { rateLimitedError, type RateLimits } from '../../ops/rate-limits.js';
import type { AttemptSlot } from '../../ops/lockout.js';
import type { ClientAuthMethodModule, Verified } from './method.js';
import { clientSecretBasic } from './client-secret-basic.js';
import { clientSecretPost } from './client-secret-post.js';
import { privateKeyJwt } from './private-key-jwt.js';
import type { ClientJwts } from './client-jwt.js';

/** Failures get more detail in events than on the wire (always a bare 401 invalid_client). */
type FailureReason = ClientAuthenticationFailedEvent['reason'];

export interface ClientAuthenticatorOptions {
  events?: EventHub;
  /** Brute-force protection: refused credentials per (registered client id, address) and per address for unknown ids, then 429 until the window passes. */
  limits?: RateLimits;
  /** Verifies `private_key_jwt` client assertions; the issuer is what their `aud` may name. */
  assertions: { jwts: ClientJwts; issuer: string };
}

/**
 * Client authentication for bc-authorize, token, introspection and revocation: one module per method
 * (`client_secret_basic` through passport, `client_secret_post`, `private_key_jwt`). Exactly one method per request; the client
 * must be registered for the method it used; a body client_id must name the same client. With rate limits
 * on, a (client id, address) pair past its failure budget is answered 429 (even with the right credentials)
 * until the window passes, as is an address past its budget for ids that name no client.
 */
export class ClientAuthenticator {
  private readonly methods: readonly ClientAuthMethodModule[];
  private readonly events: EventHub | undefined;
  private readonly limits: RateLimits | undefined;

  constructor(
    private readonly clients: ClientRegistry,
    private readonly realm: string,
    options: ClientAuthenticatorOptions,
  ) {
    this.events = options.events;
    this.limits = options.limits;
    const { jwts, issuer } = options.assertions;
    this.methods = [clientSecretBasic(clients), clientSecretPost(clients), privateKeyJwt(jwts, issuer)];
  }

  /** Whether the request carries client credentials of any method, well formed or not. */
  presents(req: Request, params: FormParams): boolean {
    return this.methods.some((m) => m.presentedIn(req, params));
  }

  async authenticate(req: Request, res: Response, params: FormParams, endpoint: Endpoint): Promise<RegisteredClient> {
    const presented = this.methods.filter((m) => m.presentedIn(req, params));
    if (presented.length > 1) throw new OAuthError('invalid_request', 'use exactly one client authentication method');
    const method = presented[0];
    if (method === undefined) throw this.failed(endpoint, 'missing');
    const claim = method.claim(req, params);
    if ('failure' in claim) throw this.failed(endpoint, claim.failure, undefined, undefined, method.method);
    const claimed = claim.clientId;

    // Brute-force protection: a failure slot is reserved before anything is compared, so concurrent guesses
    // never get more comparisons than the budget. It is keyed by the registry's canonical id (a registry that
    // normalises ids resolves every variant of a locked id to the same client) and the address the request
    // comes from, so failures elsewhere never lock a client out here; ids that name no client count per address.
    // The registry is asked once per request: the lock-out and the method's check both use what it found.
    const registered = await this.clients.find(claimed);
    let slot: AttemptSlot | undefined;
    if (this.limits) {
      const reservation = await this.limits.reserve(registered?.clientId, req.ip);
      if ('retryAfter' in reservation) throw this.lockedOut(endpoint, reservation.retryAfter, registered?.clientId);
      slot = reservation.slot;
    }
    let verified: Verified;
    try {
      verified = await method.verify(req, res, params, registered);
    } catch (error) {
      slot?.release();
      throw error;
    }
    // A client may authenticate only with the method it is registered for.
    const client = verified.client && (verified.client.tokenEndpointAuthMethod ?? 'client_secret_basic') === method.method ? verified.client : undefined;
    if (!client) {
      await slot?.spend();
      throw this.failed(endpoint, 'invalid_credentials', verified.known?.clientId, undefined, method.method);
    }
    slot?.release();
    const bodyClientId = params.get('client_id');
    if (bodyClientId !== undefined && bodyClientId !== client.clientId) {
      throw this.failed(endpoint, 'client_id_mismatch', client.clientId, 'client_id does not match the authenticated client', method.method);
    }
    return client;
  }

  /**
   * Reports the failure and makes the 401. A failed client assertion gets no Basic challenge: RFC 6749 §5.2 asks
   * for one only after the Authorization header, and it would invite a secret from a client that has none.
   */
  private failed(endpoint: Endpoint, reason: FailureReason, clientId?: string, description = 'client authentication failed', via?: ClientAuthMethod): OAuthError {
    this.events?.emit('client.authentication_failed', clientId === undefined ? { endpoint, reason } : { endpoint, clientId, reason });
    const headers: Record<string, string> = via === 'private_key_jwt' ? {} : { 'WWW-Authenticate': `Basic realm="${this.realm.replace(/["\\]/g, '')}"` };
    return new OAuthError('invalid_client', description, { headers });
  }

  /** The brute-force lock-out's 429. */
  private lockedOut(endpoint: Endpoint, retryAfter: number, clientId: string | undefined): OAuthError {
    this.events?.emit(
      'rate.limited',
      clientId === undefined ? { endpoint, limit: 'client_authentication', retryAfter } : { endpoint, limit: 'client_authentication', clientId, retryAfter },
    );
    return rateLimitedError(retryAfter, 'too many failed client authentications; retry later');
  }
}
