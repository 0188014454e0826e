import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { OAuthError } from '../errors.js';
import type { Subscriber } from '../identity/subscribers.js';
import type { GatewayContext } from '../gateway/context.js';
import { consumeSingleUseToken, findAccessToken } from '../gateway/tokens/access-tokens.js';
import { subscriberOf } from '../gateway/requests/authorization.js';
import { looksLikeJwt, verifyAccessToken } from '../gateway/tokens/jwt-access-tokens.js';
import { sendBearerError, sendJsonError, toOAuthError } from '../gateway/http/render-error.js';

/** What the guard hands a service-API route, at `req.netauth`: a token issued for a subscriber (three-legged). */
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

/** The grant of a two-legged token (client credentials): no subscriber. Only routes with `subscriber: 'optional'` see one. */
export interface NetAuthTwoLeggedGrant extends Omit<NetAuthGrant, 'subscriber'> {
  subscriber: undefined;
}

/** What a route guarded with `subscriber: 'optional'` may get: a token with a subscriber, or one without. */
export type NetAuthAnyGrant = NetAuthGrant | NetAuthTwoLeggedGrant;

/** `res.locals` of a route guarded with `subscriber: 'optional'`. */
export interface NetAuthLocals {
  netauth: NetAuthAnyGrant;
}

/**
 * The guard of a route that accepts tokens without a subscriber (`subscriber: 'optional'`): Express's
 * RequestHandler, with `res.locals.netauth` typed for the handlers that follow it.
 */
export type NetAuthOptionalSubscriberGuard = RequestHandler<Request['params'], unknown, Request['body'], Request['query'], NetAuthLocals>;

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the express-netauth guard on requests it let through with a token issued for a subscriber. */
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
  /**
   * `required` (default): only tokens issued for a subscriber pass; a two-legged token (client credentials) is
   * answered 403 `insufficient_scope`. `optional`: two-legged tokens pass too, for APIs that process no personal
   * data; the grant is then at `res.locals.netauth` (`NetAuthAnyGrant`), and `req.netauth` is set only when it
   * has a subscriber.
   */
  subscriber?: 'required' | 'optional';
}

/** A token's grant, and whether it is good for one call only (the guard then spends it). */
interface Authorized {
  grant: NetAuthAnyGrant;
  singleUse: boolean;
}

/** The grant an access token carries, or undefined when it is invalid, expired, revoked or used up. */
async function authorize(ctx: GatewayContext, token: string, revocation: 'local' | 'store'): Promise<Authorized | undefined> {
  if (ctx.keys && looksLikeJwt(token)) {
    // Verified offline: the token record is never read (but for a single-use token, which the guard spends).
    const verified = await verifyAccessToken(ctx, token);
    if (!verified) return undefined;
    if (ctx.revocations.isRevokedLocally(verified.jti, verified.grantIds)) return undefined;
    if (revocation === 'store' && (await ctx.revocations.isRevokedInStore(verified.jti, verified.grantIds))) return undefined;
    // A JWT carries the opaque subscriber id only: the phone number never travels in a token.
    const grant = { subscriber: verified.subscriberId === undefined ? undefined : { id: verified.subscriberId }, clientId: verified.clientId, purpose: verified.purpose, scopes: verified.scopes, scope: verified.scope, expiresAt: verified.expiresAt };
    return { grant: grant as NetAuthAnyGrant, singleUse: verified.singleUse };
  }
  const record = await findAccessToken(ctx, token);
  if (!record) return undefined;
  const { subscriberId, phoneNumber } = record;
  const grant = { subscriber: subscriberId === null ? undefined : subscriberOf({ subscriberId, phoneNumber }), clientId: record.clientId, purpose: record.purpose, scopes: record.scopes, scope: record.scope, expiresAt: record.expiresAt };
  return { grant: grant as NetAuthAnyGrant, singleUse: record.singleUse === true };
}

/**
 * A two-legged token on a route that needs a subscriber: 403 insufficient_scope. RFC 6750 §3.1: the token is
 * valid, but lacks what the resource needs (a subscriber behind it); 401 invalid_token would make the client
 * fetch another token of the same kind, in vain.
 */
function missingSubscriber(authorized: Authorized, option: 'required' | 'optional'): OAuthError | undefined {
  if (option === 'optional' || authorized.grant.subscriber !== undefined) return undefined;
  return new OAuthError('insufficient_scope', 'this API needs a token issued for a subscriber; a client credentials token has none');
}

/**
 * A single-use token (the scope's policy rule) is spent here, last, once every other check passed: of any number
 * of concurrent calls with it exactly one gets through (the store's atomic `consume`), on every store, for both
 * token formats; the others, and every later call, are 401 invalid_token.
 */
async function spend(ctx: GatewayContext, token: string, authorized: Authorized): Promise<OAuthError | undefined> {
  if (!authorized.singleUse || (await consumeSingleUseToken(ctx, token))) return undefined;
  return new OAuthError('invalid_token', 'the single-use access token was already used');
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

function list(value: string | readonly string[] | undefined): readonly string[] {
  return value === undefined ? [] : typeof value === 'string' ? [value] : value;
}

/** RFC 6750 protection for a service API: a bearer access token issued by this gateway, with the needed scope. */
export function createGuard(ctx: GatewayContext, options: GuardOptions & { subscriber: 'optional' }): NetAuthOptionalSubscriberGuard;
export function createGuard(ctx: GatewayContext, options?: GuardOptions): RequestHandler;
export function createGuard(ctx: GatewayContext, options: GuardOptions = {}): RequestHandler {
  const scopes = list(options.scope);
  const purposes = list(options.purpose);
  const realm = options.realm ?? ctx.realm;
  const needed = scopes.join(' ') || undefined;
  const revocation = options.revocation ?? 'local';
  if (revocation !== 'local' && revocation !== 'store') throw new TypeError("guard revocation must be 'local' or 'store'");
  const subscriber = options.subscriber ?? 'required';
  if (subscriber !== 'required' && subscriber !== 'optional') throw new TypeError("guard subscriber must be 'required' or 'optional'");

  /** The grant the token gives this route, or the error to answer. */
  const check = async (token: string): Promise<NetAuthAnyGrant | OAuthError> => {
    const authorized = await authorize(ctx, token, revocation);
    if (!authorized) return new OAuthError('invalid_token', 'the access token is invalid, expired or revoked');
    const { grant } = authorized;
    if (scopes.some((s) => !grant.scopes.includes(s)) || (purposes.length > 0 && !purposes.includes(grant.purpose))) {
      return new OAuthError('insufficient_scope', 'the access token does not cover this API');
    }
    return missingSubscriber(authorized, subscriber) ?? (await spend(ctx, token, authorized)) ?? grant;
  };

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
    check(token).then(
      (result) => {
        if (result instanceof OAuthError) {
          sendBearerError(res, realm, result, needed);
          return;
        }
        if (result.subscriber !== undefined) req.netauth = result;
        if (subscriber === 'optional') (res.locals as Partial<NetAuthLocals>).netauth = result;
        next();
      },
      (error: unknown) => {
        sendJsonError(res, toOAuthError(error, ctx.onError));
      },
    );
  };
}
