import type { Request, Response } from 'express';
import type { JWTPayload } from 'jose';
import { OAuthError } from '../../errors.js';
import type { ClientAuthMethod, ClientRegistry, RegisteredClient } from '../../registry/clients.js';
import type { FormParams } from '../http/form.js';
import type { ClientAuthenticationFailedEvent, Endpoint, EventHub } from '../../ops/events.js';
import { countersUnavailableError, rateLimitedError, type RateLimits } from '../../ops/rate-limits.js';
import type { AttemptSlot } from '../../ops/lockout.js';
import type { Check, ClientAuthMethodModule, Verified } from './method.js';
import { clientSecretBasic } from './client-secret-basic.js';
import { clientSecretPost } from './client-secret-post.js';
import { privateKeyJwt } from './private-key-jwt.js';
import { jwtBearerAssertion } from './jwt-bearer-assertion.js';
import type { ClientJwts } from './client-jwt.js';
import type { SourceLabel } from '../../ops/event-source.js';
import { StoreUnavailableError } from '../../stores/store.js';
import { CLIENT_AUTH_METHOD_DEFAULT } from '../../defaults.js';

/** Failures get more detail in events than on the wire (a bare 401 invalid_client, or the method's own answer). */
type FailureReason = ClientAuthenticationFailedEvent['reason'];

export interface ClientAuthenticatorOptions {
  events?: EventHub;
  /**
   * Brute-force protection: refused credentials per (registered client id, address) and per address for unknown
   * ids, then 429 until the window passes.
   */
  limits?: RateLimits;
  /** Verifies `private_key_jwt` client assertions; the issuer is what their `aud` may name. */
  assertions: { jwts: ClientJwts; issuer: string };
  /** The request's network as `client.authentication_failed` names it (lib/ops/event-source.ts). */
  sourceLabel: SourceLabel;
  /** The lock-out's counters are the store's and it cannot be reached: reported at the first 503, as the store's. */
  storeUnavailable?: (error: Error) => void;
}

/** An authenticated client, and the JWT bearer grant's assertion (its verified claims) when that authenticated it. */
export interface Authenticated {
  client: RegisteredClient;
  assertion?: JWTPayload;
}

/** What a failure report carries besides its reason. */
interface Failure {
  clientId?: string | undefined;
  description?: string;
  via?: ClientAuthMethod;
  /** The method's own answer, where its protocol names one (the JWT bearer grant's invalid_grant). */
  refusal?: OAuthError | undefined;
}

/**
 * Client authentication for bc-authorize, token, introspection and revocation: one module per method
 * (`client_secret_basic` through passport, `client_secret_post`, `private_key_jwt`, and at the token endpoint the
 * JWT bearer grant's assertion when no other credentials are sent). Exactly one method per request; the client
 * must be registered for the method it used; a body client_id must name the same client. With rate limits on, a
 * (client id, address) pair past its failure budget is answered 429 (even with the right credentials) until the
 * window passes, as is an address past its budget for ids that name no client. Every method's failures take
 * the same path: the lock-out, the `client.authentication_failed` event, the answer.
 */
export class ClientAuthenticator {
  private readonly methods: readonly ClientAuthMethodModule[];
  private readonly grantAssertion: ClientAuthMethodModule;
  private readonly events: EventHub | undefined;
  private readonly limits: RateLimits | undefined;
  private readonly sourceLabel: SourceLabel;
  private readonly storeUnavailable: ((error: Error) => void) | undefined;

  constructor(
    private readonly clients: ClientRegistry,
    private readonly realm: string,
    options: ClientAuthenticatorOptions,
  ) {
    this.events = options.events;
    this.limits = options.limits;
    this.sourceLabel = options.sourceLabel;
    this.storeUnavailable = options.storeUnavailable;
    const { jwts, issuer } = options.assertions;
    this.methods = [clientSecretBasic(clients), clientSecretPost(clients), privateKeyJwt(jwts, issuer)];
    this.grantAssertion = jwtBearerAssertion(jwts, issuer);
  }

  async authenticate(req: Request, res: Response, params: FormParams, endpoint: Endpoint): Promise<Authenticated> {
    const method = this.presentedMethod(req, params, endpoint);
    const outcome = await method.authenticate(req, res, params, (clientId, check) =>
      this.attempt(method.method, req, endpoint, clientId, check),
    );
    if ('failure' in outcome) throw this.failed(req, endpoint, outcome.failure, { via: method.method });
    const { client, known, refusal, assertion } = outcome;
    if (!client) {
      throw this.failed(req, endpoint, 'invalid_credentials', {
        clientId: known?.clientId,
        via: method.method,
        refusal,
      });
    }
    const bodyClientId = params.get('client_id');
    if (bodyClientId !== undefined && bodyClientId !== client.clientId) {
      const description = 'client_id does not match the authenticated client';
      throw this.failed(req, endpoint, 'client_id_mismatch', {
        clientId: client.clientId,
        description,
        via: method.method,
      });
    }
    return assertion === undefined ? { client } : { client, assertion };
  }

  /**
   * The one method whose credentials the request carries. The JWT bearer grant's assertion authenticates the
   * client only at the token endpoint, and only when no other credentials are sent (with them, the grant checks
   * that the assertion is the authenticated client's).
   */
  private presentedMethod(req: Request, params: FormParams, endpoint: Endpoint): ClientAuthMethodModule {
    let presented: ClientAuthMethodModule | undefined;
    for (const method of this.methods) {
      if (!method.presentedIn(req, params)) continue;
      if (presented) throw new OAuthError('invalid_request', 'use exactly one client authentication method');
      presented = method;
    }
    if (presented !== undefined) return presented;
    if (endpoint === 'token' && this.grantAssertion.presentedIn(req, params)) return this.grantAssertion;
    throw this.failed(req, endpoint, 'missing');
  }

  /**
   * Brute-force protection: a failure slot is reserved before anything is compared, so concurrent guesses never
   * get more comparisons than the budget. It is keyed by the registry's canonical id (a registry that normalises
   * ids resolves every variant of a locked id to the same client) and the address the request comes from, so
   * failures elsewhere never lock a client out here; ids that name no client count per address. The registry is
   * asked once per request: the lock-out and the method's check both use what it found.
   */
  private async attempt(
    method: ClientAuthMethod,
    req: Request,
    endpoint: Endpoint,
    claimed: string,
    check: Check,
  ): Promise<Verified> {
    const registered = await this.clients.find(claimed);
    let slot: AttemptSlot | undefined;
    if (this.limits) {
      const reservation = await this.limits.reserve(registered?.clientId, req.ip);
      if ('retryAfter' in reservation) {
        if (reservation.unavailable) {
          if (reservation.cause instanceof StoreUnavailableError) this.storeUnavailable?.(reservation.cause);
          throw countersUnavailableError(reservation.retryAfter);
        }
        throw this.lockedOut(endpoint, reservation.retryAfter, registered?.clientId);
      }
      slot = reservation.slot;
    }
    let verified: Verified;
    try {
      verified = await check(registered);
    } catch (error) {
      slot?.release();
      throw error;
    }
    // A client may authenticate only with the method it is registered for.
    const registeredFor = verified.client?.tokenEndpointAuthMethod ?? CLIENT_AUTH_METHOD_DEFAULT;
    if (verified.client && registeredFor === method) {
      slot?.release();
      return verified;
    }
    await slot?.spend();
    const { client: proved, ...failed } = verified;
    // The caller proved the client's secret by another method (openid-client's default is client_secret_basic):
    // name the registered one. Only then, so a caller without the credentials learns nothing of the registration.
    if (proved && !failed.refusal) {
      const description = `this client is registered for ${registeredFor}, not ${method}`;
      return { ...failed, refusal: this.invalidClient(method, description) };
    }
    return failed;
  }

  /**
   * Reports the failure and makes its answer: the method's own, or a 401. A failed client assertion gets no Basic
   * challenge: RFC 6749 §5.2 asks for one only after the Authorization header, and it would invite a secret from a
   * client that has none.
   */
  private failed(req: Request, endpoint: Endpoint, reason: FailureReason, failure: Failure = {}): OAuthError {
    const { clientId, description = 'client authentication failed', via, refusal } = failure;
    if (this.events?.has('client.authentication_failed')) {
      const source = this.sourceLabel(req.ip);
      this.events.emit(
        'client.authentication_failed',
        clientId === undefined ? { endpoint, reason, source } : { endpoint, clientId, reason, source },
      );
    }
    return refusal ?? this.invalidClient(via, description);
  }

  /** 401 invalid_client; with a Basic challenge unless the client sent an assertion (see `failed`). */
  private invalidClient(via: ClientAuthMethod | undefined, description: string): OAuthError {
    if (via === 'private_key_jwt') return new OAuthError('invalid_client', description);
    const headers = { 'WWW-Authenticate': `Basic realm="${this.realm.replace(/["\\]/g, '')}"` };
    return new OAuthError('invalid_client', description, { headers });
  }

  /** The brute-force lock-out's 429. */
  private lockedOut(endpoint: Endpoint, retryAfter: number, clientId: string | undefined): OAuthError {
    this.events?.emit(
      'rate.limited',
      clientId === undefined
        ? { endpoint, limit: 'client_authentication', retryAfter }
        : { endpoint, limit: 'client_authentication', clientId, retryAfter },
    );
    return rateLimitedError(retryAfter, 'too many failed client authentications; retry later');
  }
}
