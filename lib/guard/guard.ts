import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { OAuthError } from '../errors.js';
import type { Subscriber } from '../identity/subscribers.js';
import type { GatewayContext } from '../gateway/context.js';
import { findAccessToken } from '../gateway/tokens/access-tokens.js';
import { subscriberOf } from '../gateway/requests/authorization.js';
import { looksLikeJwt, verifyAccessToken } from '../gateway/tokens/jwt-access-tokens.js';
import { sendBearerError, sendJsonError, toOAuthError } from '../gateway/http/render-error.js';

/** What the guard hands a service-API route, at `req.netauth`. */
export interface NetAuthGrant {
  subscriber: Subscriber;
  clientId: string;
  purpose: string;
  /** API scopes of the token. */
  scopes: string[];
  /** The granted scope string. */
  scope: string;
  /** Epoch ms. */
  expiresAt: number;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the express-netauth guard on requests it let through. */
      netauth?: NetAuthGrant;
    }
  }
}

export interface GuardOptions {
  /** API scope(s) the route needs; the token must carry every one. */
  scope?: string | readonly string[];
  /** DPV purpose(s) the route accepts; default any. */
  purpose?: string | readonly string[];
  /** Realm in the challenge. Default: the router's realm. */
  realm?: string;
  /**
   * How a JWT access token's revocation is checked (opaque tokens are always looked up in the store).
   * `local` (default): this process's revocation list, no I/O; a revocation made on another instance is
   * not seen there until the token expires. `store`: the shared store's revocation list as well, one read
   * per grant id on every request; use it when several instances share a store.
   */
  revocation?: 'local' | 'store';
}

/** The grant an access token carries, or undefined when it is invalid, expired or revoked. */
async function authorize(ctx: GatewayContext, token: string, revocation: 'local' | 'store'): Promise<NetAuthGrant | undefined> {
  if (ctx.keys && looksLikeJwt(token)) {
    // Verified offline: the token record is never read.
    const verified = await verifyAccessToken(ctx, token);
    if (!verified) return undefined;
    if (ctx.revocations.isRevokedLocally(verified.jti, verified.grantIds)) return undefined;
    if (revocation === 'store' && (await ctx.revocations.isRevokedInStore(verified.jti, verified.grantIds))) return undefined;
    return {
      // A JWT carries the opaque subscriber id only: the phone number never travels in a token.
      subscriber: { id: verified.subscriberId },
      clientId: verified.clientId,
      purpose: verified.purpose,
      scopes: verified.scopes,
      scope: verified.scope,
      expiresAt: verified.expiresAt,
    };
  }
  const record = await findAccessToken(ctx, token);
  if (!record) return undefined;
  return {
    subscriber: subscriberOf(record),
    clientId: record.clientId,
    purpose: record.purpose,
    scopes: record.scopes,
    scope: record.scope,
    expiresAt: record.expiresAt,
  };
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

function list(value: string | readonly string[] | undefined): readonly string[] {
  return value === undefined ? [] : typeof value === 'string' ? [value] : value;
}

/** RFC 6750 protection for a service API: a bearer access token issued by this gateway, with the needed scope. */
export function createGuard(ctx: GatewayContext, options: GuardOptions = {}): RequestHandler {
  const scopes = list(options.scope);
  const purposes = list(options.purpose);
  const realm = options.realm ?? ctx.realm;
  const needed = scopes.join(' ') || undefined;
  const revocation = options.revocation ?? 'local';
  if (revocation !== 'local' && revocation !== 'store') throw new TypeError("guard revocation must be 'local' or 'store'");
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    if (header === undefined || !/^Bearer(\s|$)/i.test(header)) {
      sendBearerError(res, realm, undefined, needed);
      return;
    }
    const token = BEARER.exec(header)?.[1];
    if (token === undefined) {
      sendBearerError(res, realm, new OAuthError('invalid_request', 'malformed Authorization header', { status: 400 }), needed);
      return;
    }
    authorize(ctx, token, revocation).then(
      (grant) => {
        if (!grant) {
          sendBearerError(res, realm, new OAuthError('invalid_token', 'the access token is invalid, expired or revoked'), needed);
          return;
        }
        const missing = scopes.some((s) => !grant.scopes.includes(s));
        if (missing || (purposes.length > 0 && !purposes.includes(grant.purpose))) {
          sendBearerError(res, realm, new OAuthError('insufficient_scope', 'the access token does not cover this API'), needed);
          return;
        }
        req.netauth = grant;
        next();
      },
      (error: unknown) => {
        sendJsonError(res, toOAuthError(error, ctx.onError));
      },
    );
  };
}
