import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { OAuthError } from '../errors.js';
import type { Subscriber, SubscriberDirectory } from '../identity/subscribers.js';
import type { ConsentPolicy } from '../consent/policy.js';
import {
  isNetworkAuthentication,
  readIdentification,
  type SubscriberIdentification,
} from '../identity/identification.js';
import {
  consumeSingleUseToken,
  findAccessToken,
  type AccessTokenFinding,
  type AccessTokenRecord,
} from '../gateway/tokens/access-tokens.js';
import { subscriberOf } from '../gateway/requests/authorization.js';
import {
  looksLikeJwt,
  verifyAccessToken,
  type AccessTokenSigning,
  type VerifiedAccessToken,
} from '../gateway/tokens/jwt-access-tokens.js';
import { DPOP_ALGORITHMS } from '../gateway/tokens/dpop.js';
import { DPOP_HASH_CLAIMS, dpopClaimsOption } from '../gateway/tokens/dpop-binding.js';
import type { DpopHashClaim, NetAuthOptions } from '../gateway/options.js';
import { bodyHashReader } from './body-hash.js';
import { toOAuthError, type StoreReport } from '../gateway/http/render-error.js';
import {
  GuardResponses,
  camaraError,
  type AuthScheme,
  type CamaraErrorInfo,
  type GuardErrorFormat,
} from './responses.js';
import { admitAfter, admitEachAwaited, admitInTurn, Waiting, type Check } from './admission.js';
import { echoCorrelator } from './correlator.js';
import { checkSenderConstraint, type SenderConstraintCollaborators } from './dpop.js';
import { deviceIdentification, type DeviceOptions, type NetAuthDevice } from './device.js';
import { GUARD_DEFAULTS } from '../defaults.js';
import { VerifiedAccessTokens } from './verified-access-tokens.js';

/**
 * What the guard hands a service-API route, at `req.netauth`: a token issued for a subscriber (three-legged).
 * Read-only: it says what the token grants, which a route has no business changing.
 */
export interface NetAuthGrant {
  readonly subscriber: Subscriber;
  readonly clientId: string;
  readonly purpose: string;
  /** API scopes of the token: frozen, whatever the token's format or the store (a route copies it to sort it). */
  readonly scopes: readonly string[];
  /** The granted scope string. */
  readonly scope: string;
  /** Epoch ms. */
  readonly expiresAt: number;
  /**
   * How the subscriber was identified: `network` (the device's connection), `operatortoken`, or a hint the client
   * supplied (`tel`, `ipport`). Absent for a two-legged token, and for tokens of versions before it was recorded.
   */
  readonly identifiedBy?: SubscriberIdentification | undefined;
  /** With the guard's `device` option: the device the request is about (CAMARA device identification). */
  readonly device?: NetAuthDevice;
}

/** The grant of a two-legged token (client credentials): no subscriber. Only routes with `subscriber: 'optional'` see one. */
export interface NetAuthTwoLeggedGrant extends Omit<NetAuthGrant, 'subscriber'> {
  readonly subscriber: undefined;
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
export type NetAuthOptionalSubscriberGuard = RequestHandler<
  Request['params'],
  unknown,
  Request['body'],
  Request['query'],
  NetAuthLocals
>;

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
  /**
   * API scope(s) the route needs; the token must carry every one.
   * @see {@link https://www.rfc-editor.org/rfc/rfc6750#section-3.1 | RFC 6750 §3.1} (`insufficient_scope`)
   */
  scope?: string | readonly string[];
  /** DPV purpose(s) the route accepts; default any. */
  purpose?: string | readonly string[];
  /**
   * Realm in the challenge.
   * @defaultValue the router's realm
   * @see {@link https://www.rfc-editor.org/rfc/rfc6750#section-3 | RFC 6750 §3}
   */
  realm?: string;
  /**
   * How a JWT access token's revocation is checked (opaque tokens are always looked up in the store).
   * `local` (default): this process's revocation list, no I/O; a revocation made on another instance is
   * not seen there until the token expires. `store`: the shared store's revocation list as well, one read
   * per grant id on every request; use it when several instances share a store.
   * The operator's levers (`netauth.subscribers.revoke`, `netauth.clients.revoke`) reach every token format on every
   * instance: with `local`, within 5 seconds (the subscriber's and client's markers are read again at most that
   * often per instance); with `store`, at once (read on every request).
   * @see {@link https://www.rfc-editor.org/rfc/rfc7009 | RFC 7009}
   * @see {@link https://www.rfc-editor.org/rfc/rfc9068#section-4 | RFC 9068 §4}
   * @defaultValue `'local'`
   */
  revocation?: 'local' | 'store';
  /**
   * Error bodies: `oauth` (default), RFC 6750's `{error, error_description}`; `camara`, the Commonalities'
   * `{status, code, message}` (401 `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, 429 `TOO_MANY_REQUESTS`, 503 `UNAVAILABLE`, and 400
   * `INVALID_ARGUMENT` for an `x-correlator` that fails its pattern). The `WWW-Authenticate` challenges are the same.
   * @see {@link https://www.rfc-editor.org/rfc/rfc6750#section-3.1 | RFC 6750 §3.1}
   * @defaultValue `'oauth'` (`'camara'` under `profile: 'camara'`)
   */
  errorFormat?: GuardErrorFormat;
  /**
   * CAMARA device identification (Commonalities Appendix A): the device comes from a three-legged token or from
   * the request body, never both, and the route gets it at `req.netauth.device`. `true` reads the body's `device`
   * object. The body is parsed as JSON by the guard unless a parser ran before it. Needs `errorFormat: 'camara'`.
   */
  device?: true | DeviceOptions;
  /**
   * The service API's public origin (`https://api.operator.example`), for the `htu` of DPoP proofs: the URL a
   * proof must name is this origin and the request's path. Never read from the
   * request's Host or X-Forwarded-* headers.
   * @defaultValue the issuer's origin
   * @see {@link https://www.rfc-editor.org/rfc/rfc9449#section-4.3 | RFC 9449 §4.3} (`htu`)
   */
  publicOrigin?: string;
  /**
   * CAMARA's DPoP request binding on this route, beside the gateway's `dpopClaimsRequired`: every DPoP proof
   * must carry `'camara:qh'` (the query's hash) and/or `'camara:bh'` (the body's; the guard then reads the body,
   * parsing JSON into `req.body`, so mount it before the route's body parser). Present ones are always verified.
   * @see {@link https://www.rfc-editor.org/rfc/rfc9449#section-4.3 | RFC 9449 §4.3}
   */
  dpopClaimsRequired?: readonly DpopHashClaim[];
  /**
   * `required` (default): only tokens issued for a subscriber pass; a two-legged token (client credentials) is
   * answered 403 `insufficient_scope`. `optional`: two-legged tokens pass too, for APIs that process no personal
   * data; the grant is then at `res.locals.netauth` (`NetAuthAnyGrant`), and `req.netauth` is set only when it
   * has a subscriber.
   * @defaultValue `'required'`
   */
  subscriber?: 'required' | 'optional';
}

/**
 * What the guard works with: the package's access tokens (a JWT verified here, an opaque one found in the store,
 * their revocation), a bound token's proof checks, the policy (a scope's network-authentication rule), the
 * subscriber directory (device identification), the gateway's DPoP hash claims, and where failures go. The
 * composition root (lib/netauth.ts) hands every guard of a gateway the same one; the guard names nothing else.
 */
export interface GuardCollaborators extends AccessTokenSigning, AccessTokenFinding, SenderConstraintCollaborators {
  /** What the guard's defaults follow (`errorFormat` under `profile: 'camara'`). */
  profile: NetAuthOptions['profile'];
  /** The router's realm, the challenge's unless the route names its own. */
  realm: string;
  policy: ConsentPolicy;
  subscribers: SubscriberDirectory;
  bodyLimit: string | number;
  /** Hash claims every DPoP proof must carry, gateway-wide; a route may require more. */
  dpopClaimsRequired: readonly DpopHashClaim[];
  /** What discovery announces: a route's required hash claims are added here. */
  announcedDpopClaims: Set<DpopHashClaim>;
  onError: (error: unknown) => void;
  storeUnavailable: StoreReport;
}

/**
 * A live access token: the grant it carries, the DPoP key it is bound to (RFC 9449 `cnf.jkt`), and whether it
 * is good for one call only (the guard then spends it).
 */
interface FoundToken {
  grant: NetAuthAnyGrant;
  jkt: string | undefined;
  singleUse: boolean;
  /** A JWT access token's verified claims; undefined for an opaque token. */
  verified?: VerifiedAccessToken;
}

/**
 * A JWT access token, verified offline (its signature once per process, then from memory) and checked against this
 * process's revocation list: `{ found: undefined }` when it is invalid, expired or revoked here. Undefined for a
 * token that is not one (an opaque token, or no signing keys): the store has it. The token record is never read
 * (but for a single-use token, which the guard spends).
 */
function offlineToken(
  ctx: AccessTokenSigning & Pick<AccessTokenFinding, 'revocations'>,
  verifiedTokens: VerifiedAccessTokens,
  token: string,
): { found: FoundToken | undefined } | undefined {
  if (!ctx.keys) return undefined;
  let jwt = true;
  const verified = verifiedTokens.find(token, (fresh) => {
    // Tokens already verified are found above without this look at their shape.
    jwt = looksLikeJwt(fresh);
    return jwt ? verifyAccessToken(ctx, fresh) : undefined;
  });
  if (!jwt) return undefined;
  if (!verified || ctx.revocations.isRevokedLocally(verified.jti, verified.grantIds)) return { found: undefined };
  const grant = {
    // A JWT carries the opaque subscriber id only: the phone number never travels in a token.
    subscriber: verified.subscriberId === undefined ? undefined : { id: verified.subscriberId },
    clientId: verified.clientId,
    purpose: verified.purpose,
    // Frozen where it was verified (verifyAccessToken), as below: a route sees one kind of array on every path.
    scopes: verified.scopes,
    scope: verified.scope,
    expiresAt: verified.expiresAt,
    identifiedBy: verified.identifiedBy,
  };
  return { found: { grant: grant as NetAuthAnyGrant, jkt: verified.jkt, singleUse: verified.singleUse, verified } };
}

/** An opaque token's live record, as the guard's grant. */
function foundOpaque(record: AccessTokenRecord | undefined): FoundToken | undefined {
  if (!record) return undefined;
  const { subscriberId, phoneNumber } = record;
  const grant = {
    subscriber: subscriberId === null ? undefined : subscriberOf({ subscriberId, phoneNumber }),
    clientId: record.clientId,
    purpose: record.purpose,
    // A MemoryStore record is frozen already, a RedisStore one is fresh from JSON: frozen alike here.
    scopes: Object.freeze(record.scopes),
    scope: record.scope,
    expiresAt: record.expiresAt,
    identifiedBy: readIdentification(record.identifiedBy),
  };
  return { grant: grant as NetAuthAnyGrant, jkt: record.jkt ?? undefined, singleUse: record.singleUse === true };
}

/**
 * A two-legged token on a route that needs a subscriber: 403 insufficient_scope. RFC 6750 §3.1: the token is
 * valid, but lacks what the resource needs (a subscriber behind it); 401 invalid_token would make the client
 * fetch another token of the same kind, in vain.
 */
function missingSubscriber(found: FoundToken, option: 'required' | 'optional'): OAuthError | undefined {
  if (option === 'optional' || found.grant.subscriber !== undefined) return undefined;
  return new OAuthError(
    'insufficient_scope',
    'this API needs a token issued for a subscriber; a client credentials token has none',
  );
}

/**
 * A token whose subscriber the client named (or whose identification is not recorded: an earlier version's), for a
 * scope whose rule requires network authentication: 403 insufficient_scope. The gateway issues no such token; this
 * holds for those issued before (an earlier version, or a rule changed since), so Number Verification never
 * answers what the network did not prove. A network-identified token costs one comparison.
 */
function unauthenticatedSubscriber(policy: ConsentPolicy, grant: NetAuthAnyGrant): OAuthError | undefined {
  const { identifiedBy } = grant;
  if (grant.subscriber === undefined || (identifiedBy !== undefined && isNetworkAuthentication(identifiedBy)))
    return undefined;
  const scope = grant.scopes.find((s) => policy.rule(grant.purpose, s)?.requireNetworkAuthentication === true);
  if (scope === undefined) return undefined;
  return new OAuthError(
    'insufficient_scope',
    `dpv:${grant.purpose}#${scope} requires the subscriber identified by the mobile network or an operator token`,
  );
}

/**
 * A single-use token (the scope's policy rule) is spent here, once the token itself passed (valid, sender-bound,
 * covering the route), before the request's device is compared, whatever the call's answer then: of any number
 * of concurrent calls with it exactly one gets through (the store's atomic `consume`), on every store, for both
 * token formats; the others, and every later call, are 401 invalid_token.
 */
async function spend(ctx: Pick<AccessTokenFinding, 'store'>, token: string): Promise<OAuthError | undefined> {
  if (await consumeSingleUseToken(ctx, token)) return undefined;
  return new OAuthError('invalid_token', 'the single-use access token was already used');
}

/** RFC 6750 §2.1 and RFC 9449 §7.1: the scheme, then a token68. */
const CREDENTIALS = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i;
const SCHEME = /^(Bearer|DPoP)(\s|$)/i;

type Presented = { scheme: AuthScheme; token: string } | { scheme: AuthScheme; token: undefined } | undefined;

/** The token of the Authorization header (undefined token: malformed), or undefined for none of these schemes. */
function presentedToken(header: string | undefined): Presented {
  if (header === undefined) return undefined;
  // A well-formed header is matched once; only one that is not is looked at again, for its scheme.
  const credentials = CREDENTIALS.exec(header);
  const scheme = credentials?.[1] ?? SCHEME.exec(header)?.[1];
  if (scheme === undefined) return undefined;
  return { scheme: scheme.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer', token: credentials?.[2] };
}

/** Whether every scope the route needs is among the token's. */
function coversScopes(needed: readonly string[], granted: readonly string[]): boolean {
  for (const scope of needed) if (!granted.includes(scope)) return false;
  return true;
}

function list(value: string | readonly string[] | undefined): readonly string[] {
  return value === undefined ? [] : typeof value === 'string' ? [value] : value;
}

function originOf(value: string): string {
  if (!URL.canParse(value))
    throw new TypeError('guard publicOrigin must be an absolute URL, e.g. https://api.operator.example');
  const url = new URL(value);
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.pathname !== '/' || url.search || url.hash) {
    throw new TypeError(
      'guard publicOrigin must be an http(s) origin without path, query or fragment, e.g. https://api.operator.example',
    );
  }
  return url.origin;
}

/** What stops a request: an OAuth error (in the challenge of the scheme used), or a CAMARA device error. */
type Refusal = OAuthError | CamaraErrorInfo;

/** One request's admission, as the checks fill it in. */
interface Admission {
  readonly req: Request;
  readonly res: Response;
  readonly scheme: AuthScheme;
  readonly token: string;
  /** A JWT access token's offline verdict (`offlineToken`); undefined for an opaque token, which the store has. */
  offline: { found: FoundToken | undefined } | undefined;
  /** The live token, once found. */
  found: FoundToken | undefined;
  /** A JWT's subscriber and client markers as read in the last seconds; undefined when not read recently. */
  marked: boolean | undefined;
  /** With the `device` option: the device the request is about. */
  device: NetAuthDevice | undefined;
}

/** A check of the guard's admission pipeline. */
export type GuardCheck = Check<Admission, Refusal>;

/**
 * How a guard runs its checks. `same-turn` (what the gateway uses): the loop answers in the request's turn unless
 * a check needs I/O. `async`: the reference execution (every check awaited, none skipped), and `amend`, a change to
 * the list: for the equivalence property test, which compares the two and shows an unequal check fails it.
 */
export interface GuardExecution {
  execution: 'same-turn' | 'async';
  amend?: (checks: readonly GuardCheck[]) => readonly GuardCheck[];
}

const SAME_TURN: GuardExecution = { execution: 'same-turn' };

function unknownToken(): OAuthError {
  return new OAuthError('invalid_token', 'the access token is invalid, expired or revoked');
}

/**
 * Protection for a service API: an access token issued by this gateway (RFC 6750 Bearer, or RFC 9449 DPoP with
 * its proof when the token is bound), with the needed scope; optionally the CAMARA conventions (error bodies,
 * device identification). A valid `x-correlator` is echoed on every answer.
 */
export function createGuard(
  ctx: GuardCollaborators,
  options: GuardOptions & { subscriber: 'optional' },
  verifiedTokens?: VerifiedAccessTokens,
): NetAuthOptionalSubscriberGuard;
export function createGuard(
  ctx: GuardCollaborators,
  options?: GuardOptions,
  verifiedTokens?: VerifiedAccessTokens,
  execution?: GuardExecution,
): RequestHandler;
/** `verifiedTokens`: shared by every guard of one gateway (createNetAuth makes one), else this guard's own. */
export function createGuard(
  ctx: GuardCollaborators,
  options: GuardOptions = {},
  verifiedTokens = new VerifiedAccessTokens(ctx.now),
  execution: GuardExecution = SAME_TURN,
): RequestHandler {
  const scopes = list(options.scope);
  const purposes = list(options.purpose);
  const revocation = options.revocation ?? GUARD_DEFAULTS.revocation;
  if (revocation !== 'local' && revocation !== 'store')
    throw new TypeError("guard revocation must be 'local' or 'store'");
  const subscriber = options.subscriber ?? GUARD_DEFAULTS.subscriber;
  if (subscriber !== 'required' && subscriber !== 'optional')
    throw new TypeError("guard subscriber must be 'required' or 'optional'");
  // The CAMARA profile's error bodies, by default on every route under `profile: 'camara'`.
  const format = options.errorFormat ?? (ctx.profile === 'camara' ? 'camara' : GUARD_DEFAULTS.errorFormat);
  if (format !== 'oauth' && format !== 'camara') throw new TypeError("guard errorFormat must be 'oauth' or 'camara'");
  if (options.device !== undefined && format !== 'camara') {
    throw new TypeError(
      "guard device identification answers with the CAMARA error codes: set errorFormat: 'camara' beside device",
    );
  }
  const identify =
    options.device === undefined
      ? undefined
      : deviceIdentification(ctx.subscribers, options.device === true ? {} : options.device, ctx.bodyLimit);
  const routeClaims = dpopClaimsOption(options.dpopClaimsRequired, 'guard dpopClaimsRequired');
  const required = DPOP_HASH_CLAIMS.filter((c) => ctx.dpopClaimsRequired.includes(c) || routeClaims.includes(c));
  // What is enforced is announced (CAMARA: required extension claims MUST be in the metadata).
  for (const claim of routeClaims) ctx.announcedDpopClaims.add(claim);
  const bodyHash = bodyHashReader(ctx.bodyLimit);
  const origin = options.publicOrigin === undefined ? new URL(ctx.issuer).origin : originOf(options.publicOrigin);
  const responses = new GuardResponses(format, {
    realm: options.realm ?? ctx.realm,
    scope: scopes.join(' ') || undefined,
    algs: DPOP_ALGORITHMS,
  });
  const markers = revocation === 'store' ? 'store' : 'recent';

  /**
   * The checks in their order: the token (a JWT here, an opaque one in the store), its revocation, its sender
   * constraint, scope and purpose, subscriber, its single use, the device.
   */
  const pipeline: readonly GuardCheck[] = [
    {
      name: 'jwt',
      io: false,
      run(a) {
        // A JWT access token verified here, its markers read in the last seconds answer too.
        a.offline = offlineToken(ctx, verifiedTokens, a.token);
        if (a.offline === undefined) return undefined;
        const { found } = a.offline;
        if (found === undefined) return unknownToken();
        a.found = found;
        if (found.verified !== undefined) a.marked = ctx.notBefore.refusesFromMemory(found.verified);
        return a.marked === true ? unknownToken() : undefined;
      },
    },
    {
      name: 'opaque',
      io: true,
      skips: (a) => a.offline !== undefined,
      async run(a) {
        if (a.offline !== undefined) return undefined;
        a.found = foundOpaque(await findAccessToken(ctx, a.token, markers));
        return a.found === undefined ? unknownToken() : undefined;
      },
    },
    {
      // A JWT's revocation beyond this process's list: its markers (when not read recently), and with
      // `revocation: 'store'` the shared store's list. An opaque token's were read with its record.
      name: 'revocation',
      io: true,
      skips: (a) => a.found?.verified === undefined || (revocation === 'local' && a.marked === false),
      async run(a) {
        const verified = a.found?.verified;
        if (verified === undefined) return undefined;
        if (revocation === 'local') return (await ctx.notBefore.refusesRecently(verified)) ? unknownToken() : undefined;
        const refused = await Promise.all([
          ctx.revocations.isRevokedInStore(verified.jti, verified.grantIds),
          ctx.notBefore.refuses(verified),
        ]);
        return refused.includes(true) ? unknownToken() : undefined;
      },
    },
    {
      // A Bearer token bound to no key has no proof to check.
      name: 'sender constraint',
      io: true,
      skips: (a) => a.found!.jkt === undefined && a.scheme === 'Bearer',
      async run(a) {
        const { found, req, res, scheme, token } = a;
        const bound = { jkt: found!.jkt, clientId: found!.grant.clientId };
        try {
          await checkSenderConstraint(ctx, req, { scheme, token }, bound, origin, { required, bodyHash, res });
          return undefined;
        } catch (error) {
          if (!(error instanceof OAuthError)) throw error;
          return error;
        }
      },
    },
    {
      name: 'coverage',
      io: false,
      run({ found }) {
        const { grant } = found!;
        if (!coversScopes(scopes, grant.scopes) || (purposes.length > 0 && !purposes.includes(grant.purpose)))
          return new OAuthError('insufficient_scope', 'the access token does not cover this API');
        return missingSubscriber(found!, subscriber) ?? unauthenticatedSubscriber(ctx.policy, grant);
      },
    },
    {
      // Spent before the device is compared: a mismatch (403) must not leave the token for another number.
      name: 'single use',
      io: true,
      skips: (a) => !a.found!.singleUse,
      run: (a) => (a.found!.singleUse ? spend(ctx, a.token) : Promise.resolve(undefined)),
    },
    {
      name: 'device',
      io: true,
      skips: () => identify === undefined,
      async run(a) {
        if (identify === undefined) return undefined;
        // Typed to take no subscriber too: a token issued with none (two-legged) must name the device in the body.
        const device = await identify(a.req, a.res, a.found!.grant.subscriber as Subscriber | undefined);
        if ('code' in device) return device;
        a.device = device;
        return undefined;
      },
    },
  ];
  const checks = execution.amend ? execution.amend(pipeline) : pipeline;

  /** A store that failed (503) or a bug (500, reported): the answer, never a thrown error. */
  function failed(res: Response, error: unknown): void {
    responses.refuse(res, toOAuthError(error, ctx.onError, ctx.storeUnavailable), undefined);
  }

  /** The admission's answer: the refusal, or the grant handed to the route. */
  function conclude(a: Admission, refusal: Refusal | undefined, next: NextFunction): void {
    if (refusal instanceof OAuthError) responses.refuse(a.res, refusal, a.scheme);
    else if (refusal !== undefined) responses.fail(a.res, refusal);
    else {
      const { grant } = a.found!;
      grantTo(a.req, a.res, a.device === undefined ? grant : { ...grant, device: a.device });
      next();
    }
  }

  function grantTo(req: Request, res: Response, grant: NetAuthAnyGrant): void {
    if (grant.subscriber !== undefined) req.netauth = grant as NetAuthGrant;
    if (subscriber === 'optional') (res.locals as Partial<NetAuthLocals>).netauth = grant;
  }

  return (req: Request, res: Response, next: NextFunction) => {
    const { headers } = req;
    if (echoCorrelator(headers, res) === 'invalid' && format === 'camara') {
      // Commonalities §5.8.5: a value that fails the pattern is 400 INVALID_ARGUMENT (and is not echoed).
      responses.fail(res, camaraError(400, 'INVALID_ARGUMENT', 'x-correlator does not match its pattern.'));
      return;
    }
    const presented = presentedToken(headers.authorization);
    if (presented === undefined) {
      responses.refuse(res, undefined, undefined);
      return;
    }
    const { scheme, token } = presented;
    if (token === undefined) {
      const malformed = new OAuthError('invalid_request', 'malformed Authorization header', { status: 400 });
      responses.refuse(res, malformed, scheme);
      return;
    }
    const admission: Admission = {
      req,
      res,
      scheme,
      token,
      offline: undefined,
      found: undefined,
      marked: undefined,
      device: undefined,
    };
    if (execution.execution === 'async') {
      admitEachAwaited(checks, admission).then(
        (refusal) => conclude(admission, refusal, next),
        (error: unknown) => failed(res, error),
      );
      return;
    }
    let verdict: Refusal | undefined | Waiting<Refusal>;
    try {
      verdict = admitInTurn(checks, admission);
    } catch (error) {
      failed(res, error);
      return;
    }
    // A JWT access token this process checks alone, needing no I/O on this route either: the route runs in this turn.
    if (!(verdict instanceof Waiting)) {
      conclude(admission, verdict, next);
      return;
    }
    admitAfter(checks, admission, verdict).then(
      (refusal) => conclude(admission, refusal, next),
      (error: unknown) => failed(res, error),
    );
  };
}
