import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import type { ClientAuthMethod, ClientRegistry, RegisteredClient } from '../../registry/clients.js';
import type { FormParams } from '../http/form.js';
import type { ClientAuthenticationFailedEvent, Endpoint, EventHub } from '../../ops/events.js';
import { rateLimitedError, type RateLimits } from '../../ops/rate-limits.js';
import type { ClientAuthMethodModule } from './method.js';
import { clientSecretBasic } from './client-secret-basic.js';
import { clientSecretPost } from './client-secret-post.js';
import { privateKeyJwt } from './private-key-jwt.js';
import type { ClientJwts } from './client-jwt.js';

/** Failures get more detail in events than on the wire (always a bare 401 invalid_client). */
type FailureReason = ClientAuthenticationFailedEvent['reason'];

export interface ClientAuthenticatorOptions {
  events?: EventHub;
  /** Brute-force protection: failed attempts per registered client id and per address, then 429 until the window passes. */
  limits?: RateLimits;
  /** Verifies `private_key_jwt` client assertions; the issuer is what their `aud` may name. */
  assertions: { jwts: ClientJwts; issuer: string };
}

/**
 * Client authentication for bc-authorize, token, introspection and revocation: one module per method
 * (`client_secret_basic` through passport, `client_secret_post`, `private_key_jwt`). Exactly one method per request; the client
 * must be registered for the method it used; a body client_id must name the same client. With rate limits
 * on, a client id or address past its failure threshold is answered 429 (even with the right credentials)
 * until the window passes.
 */
export class ClientAuthenticator {
  private readonly methods: readonly ClientAuthMethodModule[];
  private readonly events: EventHub | undefined;
  private readonly limits: RateLimits | undefined;

  constructor(
    clients: ClientRegistry,
    private readonly realm: string,
    options: ClientAuthenticatorOptions,
  ) {
    this.events = options.events;
    this.limits = options.limits;
    const { jwts, issuer } = options.assertions;
    this.methods = [clientSecretBasic(clients), clientSecretPost(clients), privateKeyJwt(clients, jwts, issuer)];
  }

  async authenticate(req: Request, res: Response, params: FormParams, endpoint: Endpoint): Promise<RegisteredClient> {
    const presented = this.methods.filter((m) => m.presentedIn(req, params));
    if (presented.length > 1) throw new OAuthError('invalid_request', 'use exactly one client authentication method');
    const method = presented[0];
    if (method === undefined) throw this.failed(endpoint, 'missing');
    const claim = method.claim(req, params);
    if ('failure' in claim) throw this.failed(endpoint, claim.failure, undefined, undefined, method.method);
    const claimed = claim.clientId;

    const limits = this.limits;
    let lockState: Promise<number | undefined> | undefined;
    if (limits) {
      // A lock-out this process knows of answers before any secret is compared (a locked-out guesser costs nothing);
      // the shared counters are read while the secret is checked.
      const wait = limits.lockedLocally(claimed, req.ip);
      if (wait !== undefined) throw this.lockedOut(endpoint, wait, undefined);
      lockState = limits.lockedOut(claimed, req.ip);
    }
    const verified = await method.verify(req, res, params, claimed);
    // A client may authenticate only with the method it is registered for.
    const client = verified.client && (verified.client.tokenEndpointAuthMethod ?? 'client_secret_basic') === method.method ? verified.client : undefined;
    if (!client) {
      const knownId = verified.known?.clientId;
      const wait = limits ? await limits.failed(knownId, req.ip) : undefined;
      const error = this.failed(endpoint, 'invalid_credentials', knownId, undefined, method.method);
      throw wait === undefined ? error : this.lockedOut(endpoint, wait, knownId);
    }
    const wait = await lockState;
    if (wait !== undefined) throw this.lockedOut(endpoint, wait, client.clientId);
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
