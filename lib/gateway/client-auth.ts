import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Request, Response } from 'express';
import { OAuthError } from '../errors.js';
import { verifyClientSecret, type ClientRegistry, type RegisteredClient } from '../registry/clients.js';
import type { FormParams } from './form.js';
import type { ClientAuthenticationFailedEvent, Endpoint, EventHub } from './events.js';
import { rateLimitedError, type RateLimits } from './rate-limits.js';

/**
 * Compared against when the client id is unknown. One shared registration, so its digest is cached like a
 * real client's and an unknown id costs exactly what a known one does (one hash of the presented secret).
 */
const DECOY_CLIENT: RegisteredClient = { clientId: '', grantTypes: [], scopes: [], clientSecret: '\0' };

/** RFC 6749 Appendix B: `+` is a space, then percent-decoding. Undefined when malformed. */
export function formDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
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

/** What a credential check found: the client when the credentials hold; `known` whenever the client id is registered. */
interface Verified {
  client?: RegisteredClient;
  known?: RegisteredClient;
}

/** Failures get more detail in events than on the wire (always a bare 401 invalid_client). */
type FailureReason = ClientAuthenticationFailedEvent['reason'];

export interface ClientAuthenticatorOptions {
  events?: EventHub;
  /** Brute-force protection: failed attempts per registered client id and per address, then 429 until the window passes. */
  limits?: RateLimits;
}

/**
 * Client authentication for bc-authorize, token, introspection and revocation: HTTP Basic through passport, or
 * client_secret_post for clients registered with it. Exactly one method; a body client_id must name the same
 * client. With rate limits on, a client id or address past its failure threshold is answered 429 (even with
 * the right credentials) until the window passes.
 */
export class ClientAuthenticator {
  private readonly passport = new passport.Passport();
  /** The outcome of the Basic strategy's check, handed from passport's callback back to `authenticate`. */
  private readonly outcomes = new WeakMap<Request, Verified>();
  private readonly events: EventHub | undefined;
  private readonly limits: RateLimits | undefined;

  constructor(
    private readonly clients: ClientRegistry,
    private readonly realm: string,
    options: ClientAuthenticatorOptions = {},
  ) {
    this.events = options.events;
    this.limits = options.limits;
    this.passport.use(
      new ClientSecretBasicStrategy((req, clientId, secret, done) => {
        this.verify(clientId, secret, 'client_secret_basic').then((verified) => {
          this.outcomes.set(req, verified);
          done(null, verified.client ?? false);
        }, done);
      }),
    );
  }

  async authenticate(req: Request, res: Response, params: FormParams, endpoint: Endpoint): Promise<RegisteredClient> {
    const header = req.headers.authorization;
    const postSecret = params.get('client_secret');
    const bodyClientId = params.get('client_id');
    if (header !== undefined && postSecret !== undefined) {
      throw new OAuthError('invalid_request', 'use exactly one client authentication method');
    }
    if (params.has('client_assertion') || params.has('client_assertion_type')) {
      throw this.failed(endpoint, 'unsupported_method', undefined, 'client assertions are not supported');
    }
    let claimed: string | undefined;
    if (header !== undefined) {
      claimed = parseBasic(header)?.clientId;
      if (claimed === undefined) throw this.failed(endpoint, 'malformed');
    } else if (postSecret !== undefined && bodyClientId !== undefined) {
      claimed = bodyClientId;
    } else {
      throw this.failed(endpoint, 'missing');
    }

    const limits = this.limits;
    let lockState: Promise<number | undefined> | undefined;
    if (limits) {
      // A lock-out this process knows of answers before any secret is compared (a locked-out guesser costs nothing);
      // the shared counters are read while the secret is checked.
      const wait = limits.lockedLocally(claimed, req.ip);
      if (wait !== undefined) throw this.lockedOut(endpoint, wait, undefined);
      lockState = limits.lockedOut(claimed, req.ip);
    }
    const verified = header !== undefined ? await this.basic(req, res) : await this.verify(claimed, postSecret!, 'client_secret_post');
    const client = verified.client;
    if (!client) {
      const knownId = verified.known?.clientId;
      const wait = limits ? await limits.failed(knownId, req.ip) : undefined;
      const error = this.failed(endpoint, 'invalid_credentials', knownId);
      throw wait === undefined ? error : this.lockedOut(endpoint, wait, knownId);
    }
    const wait = await lockState;
    if (wait !== undefined) throw this.lockedOut(endpoint, wait, client.clientId);
    if (bodyClientId !== undefined && bodyClientId !== client.clientId) {
      throw this.failed(endpoint, 'client_id_mismatch', client.clientId, 'client_id does not match the authenticated client');
    }
    return client;
  }

  private basic(req: Request, res: Response): Promise<Verified> {
    return new Promise((resolve, reject) => {
      const run = this.passport.authenticate('client_secret_basic', { session: false }, (error: unknown) => {
        if (error) reject(error);
        else resolve(this.outcomes.get(req) ?? {});
      }) as (req: Request, res: Response, next: (error?: unknown) => void) => void;
      run(req, res, reject);
    });
  }

  private async verify(clientId: string, secret: string, method: 'client_secret_basic' | 'client_secret_post'): Promise<Verified> {
    const client = await this.clients.find(clientId);
    if (!client) {
      // Spend the same work as a real comparison, so unknown ids are not told apart by timing.
      await verifyClientSecret(DECOY_CLIENT, secret);
      return {};
    }
    const ok = await verifyClientSecret(client, secret);
    if (!ok || (client.tokenEndpointAuthMethod ?? 'client_secret_basic') !== method) return { known: client };
    return { client, known: client };
  }

  /** Reports the failure and makes the 401. */
  private failed(endpoint: Endpoint, reason: FailureReason, clientId?: string, description = 'client authentication failed'): OAuthError {
    this.events?.emit('client.authentication_failed', clientId === undefined ? { endpoint, reason } : { endpoint, clientId, reason });
    return new OAuthError('invalid_client', description, { headers: { 'WWW-Authenticate': `Basic realm="${this.realm.replace(/["\\]/g, '')}"` } });
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
