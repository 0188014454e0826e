import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Request, Response } from 'express';
import { OAuthError } from '../errors.js';
import { verifyClientSecret, type ClientRegistry, type RegisteredClient } from '../registry/clients.js';
import type { FormParams } from './form.js';

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

/**
 * Client authentication for bc-authorize and token: HTTP Basic through passport, or client_secret_post
 * for clients registered with it. Exactly one method; a body client_id must name the same client.
 */
export class ClientAuthenticator {
  private readonly passport = new passport.Passport();

  constructor(
    private readonly clients: ClientRegistry,
    private readonly realm: string,
  ) {
    this.passport.use(
      new ClientSecretBasicStrategy((_req, clientId, secret, done) => {
        this.verify(clientId, secret, 'client_secret_basic').then((client) => done(null, client ?? false), done);
      }),
    );
  }

  async authenticate(req: Request, res: Response, params: FormParams): Promise<RegisteredClient> {
    const header = req.headers.authorization;
    const postSecret = params.get('client_secret');
    const bodyClientId = params.get('client_id');
    if (header !== undefined && postSecret !== undefined) {
      throw new OAuthError('invalid_request', 'use exactly one client authentication method');
    }
    if (params.has('client_assertion') || params.has('client_assertion_type')) {
      throw this.invalidClient('client assertions are not supported');
    }
    let client: RegisteredClient | undefined;
    if (header !== undefined) {
      client = await this.basic(req, res);
    } else if (postSecret !== undefined && bodyClientId !== undefined) {
      client = await this.verify(bodyClientId, postSecret, 'client_secret_post');
    }
    if (!client) throw this.invalidClient('client authentication failed');
    if (bodyClientId !== undefined && bodyClientId !== client.clientId) {
      throw this.invalidClient('client_id does not match the authenticated client');
    }
    return client;
  }

  private basic(req: Request, res: Response): Promise<RegisteredClient | undefined> {
    return new Promise((resolve, reject) => {
      const run = this.passport.authenticate('client_secret_basic', { session: false }, (error: unknown, client: RegisteredClient | false) => {
        if (error) reject(error);
        else resolve(client || undefined);
      }) as (req: Request, res: Response, next: (error?: unknown) => void) => void;
      run(req, res, reject);
    });
  }

  private async verify(clientId: string, secret: string, method: 'client_secret_basic' | 'client_secret_post'): Promise<RegisteredClient | undefined> {
    const client = await this.clients.find(clientId);
    if (!client) {
      // Spend the same work as a real comparison, so unknown ids are not told apart by timing.
      await verifyClientSecret({ clientId, grantTypes: [], scopes: [], clientSecret: '\0' }, secret);
      return undefined;
    }
    const ok = await verifyClientSecret(client, secret);
    if (!ok || (client.tokenEndpointAuthMethod ?? 'client_secret_basic') !== method) return undefined;
    return client;
  }

  private invalidClient(description: string): OAuthError {
    return new OAuthError('invalid_client', description, { headers: { 'WWW-Authenticate': `Basic realm="${this.realm.replace(/["\\]/g, '')}"` } });
  }
}
