import { decodeJwt, type JWTPayload } from 'jose';
import { parseScope } from '../../identity/scope.js';
import { signJws, verifyJws, type JsonObject } from './jws.js';
import { openSubscriber, sealSubscriber } from './sealed-subscriber.js';
import { amrOf, readIdentification, type SubscriberIdentification } from '../../identity/identification.js';
import type { KeySet } from './keys.js';
import type { PairwiseSubject } from '../../identity/pairwise-subject.js';

/** What signing and verifying JWT access tokens uses: the keys, the issuer, the audience, the clock, `sub`. */
export interface AccessTokenSigning {
  keys: KeySet | undefined;
  issuer: string;
  accessTokenAudience: string;
  now: () => number;
  pairwiseSubject: PairwiseSubject;
}

/**
 * JWT access tokens, RFC 9068: header `typ: at+jwt`; claims iss, exp, iat, aud, sub, client_id, scope, jti,
 * plus private claims:
 * - `purpose`: the DPV purpose the token was granted for (as in introspection responses);
 * - `grant_ids`: the random, opaque ids of the grants the token was issued under (its authorization and the
 *   consents it rests on), so revoking a grant reaches a token that is verified with no store lookup;
 * - `single_use: true` on a token good for one API call (the guard then consumes its store record);
 * - `two_legged: true` on a token with no subscriber (client credentials): its `sub` is then the client_id,
 *   as RFC 9068 §2.2 asks, and names no subscriber;
 * - `identified_by`: how the subscriber was identified (lib/identity/identification.ts), with its `amr`
 *   (RFC 9068 §2.2.1), which Number Verification's API asks the service to read;
 * - `authorized_at`: when the token's authorization began (NumericDate, to the millisecond), which the guard
 *   compares with the subscriber's and client's not-before markers (the operator's levers).
 * `sub` is otherwise pairwise (`pairwiseSalt`, as in ID tokens and introspection): two clients cannot correlate
 * a subscriber by it (RFC 9068 §6). The operator's subscriber id, which the guard hands the service APIs, travels
 * sealed for the gateway alone in `subscriber_sealed` (./sealed-subscriber.ts); never the phone number.
 * A token bound to a DPoP key carries `cnf.jkt` (RFC 9449 §6.1).
 */
export interface AccessTokenClaims extends JWTPayload {
  iss: string;
  sub: string;
  aud: string;
  exp: number;
  iat: number;
  jti: string;
  client_id: string;
  scope: string;
  purpose: string;
  grant_ids: string[];
  single_use?: true;
  two_legged?: true;
  subscriber_sealed?: string;
  identified_by?: SubscriberIdentification;
  amr?: string[];
  authorized_at?: number;
  cnf?: { jkt: string };
}

export interface JwtAccessTokenInput {
  clientId: string;
  /** Null for a two-legged token (client credentials). */
  subscriberId: string | null;
  scope: string;
  purpose: string;
  grants: readonly string[];
  jti: string;
  /** Epoch seconds. */
  iat: number;
  exp: number;
  singleUse: boolean;
  /** Null for a two-legged token, and for an authorization recorded before identifications were. */
  identifiedBy: SubscriberIdentification | null | undefined;
  /** The DPoP key's thumbprint, when the token is bound to one. */
  jkt?: string;
  /** Epoch ms when the authorization began. */
  authorizedAt: number;
}

export function signAccessToken(ctx: AccessTokenSigning, input: JwtAccessTokenInput): string {
  const key = ctx.keys?.active;
  if (!key) throw new Error('JWT access tokens need a signing key');
  const claims: AccessTokenClaims = {
    iss: ctx.issuer,
    sub: input.subscriberId === null ? input.clientId : ctx.pairwiseSubject(input.clientId, input.subscriberId),
    aud: ctx.accessTokenAudience,
    exp: input.exp,
    iat: input.iat,
    jti: input.jti,
    client_id: input.clientId,
    scope: input.scope,
    purpose: input.purpose,
    grant_ids: [...input.grants],
    ...(input.singleUse ? { single_use: true as const } : {}),
    ...(input.subscriberId === null
      ? { two_legged: true as const }
      : { subscriber_sealed: sealSubscriber(key.privateKey, input.jti, input.subscriberId) }),
    ...(input.identifiedBy ? { identified_by: input.identifiedBy, amr: amrOf(input.identifiedBy) } : {}),
    ...(input.jkt === undefined ? {} : { cnf: { jkt: input.jkt } }),
    authorized_at: input.authorizedAt / 1000,
  };
  return signJws(key, 'at+jwt', claims);
}

const JWS_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** A compact JWS: three base64url parts. Opaque tokens (`<tag>.<base64url>`, one dot) never look like one. */
export function looksLikeJwt(token: string): boolean {
  // An opaque token (one dot) is told apart by its dots, before the pattern runs.
  const first = token.indexOf('.');
  return first >= 0 && token.indexOf('.', first + 1) >= 0 && JWS_SHAPE.test(token);
}

/** The `jti` claim of a JWT as written, unverified ('' when there is none): only to find where its record is kept. */
export function jtiOf(token: string): string {
  try {
    const { jti } = decodeJwt(token);
    return typeof jti === 'string' ? jti : '';
  } catch {
    return '';
  }
}

/** What a verified JWT access token grants. */
export interface VerifiedAccessToken {
  jti: string;
  clientId: string;
  /** Undefined for a two-legged token (client credentials). */
  subscriberId: string | undefined;
  /** The guard must consume the token's store record: it is good for one call. */
  singleUse: boolean;
  purpose: string;
  /** Frozen, as `grantIds`: what the guard hands a route, shared by every call with the token. */
  scopes: readonly string[];
  scope: string;
  grantIds: readonly string[];
  /** Epoch ms. */
  issuedAt: number;
  expiresAt: number;
  /** `cnf.jkt`: the DPoP key the token is bound to; undefined when unbound. */
  jkt: string | undefined;
  /** How the subscriber was identified; undefined for a two-legged token (and tokens of earlier versions). */
  identifiedBy: SubscriberIdentification | undefined;
  /** Epoch ms when the token's authorization began; 0 for tokens of earlier versions (before any marker). */
  authorizedAt: number;
}

/** `cnf` as RFC 9449 §6.1 has it: absent, or an object whose `jkt` is a string; anything else fails the token. */
function confirmationOf(cnf: unknown): { jkt: string | undefined } | undefined {
  if (cnf === undefined) return { jkt: undefined };
  if (cnf === null || typeof cnf !== 'object' || typeof (cnf as { jkt?: unknown }).jkt !== 'string') return undefined;
  return { jkt: (cnf as { jkt: string }).jkt };
}

/** `typ: at+jwt` (RFC 9068 §4) compared as a media type (RFC 7515 §4.1.9): any case, `application/` implied. */
function isAccessTokenType(typ: unknown): boolean {
  if (typeof typ !== 'string') return false;
  const type = typ.toLowerCase();
  return type === 'at+jwt' || type === 'application/at+jwt';
}

const REQUIRED_CLAIMS = ['iss', 'aud', 'sub', 'iat', 'exp', 'jti'];

/**
 * The registered claims (RFC 7519 §4.1) of a token whose signature holds: all present, issued by this gateway for
 * the service APIs' audience, `nbf` (when present) reached and `exp` not, on the gateway's clock in whole seconds
 * with no tolerance (the clock that issued the token is the one that checks it).
 */
function registeredClaimsHold(ctx: AccessTokenSigning, claims: JsonObject): boolean {
  for (const name of REQUIRED_CLAIMS) if (!Object.hasOwn(claims, name)) return false;
  if (claims.iss !== ctx.issuer) return false;
  const { aud, iat, nbf, exp } = claims;
  if (aud !== ctx.accessTokenAudience && !(Array.isArray(aud) && aud.includes(ctx.accessTokenAudience))) return false;
  const now = Math.floor(ctx.now() / 1000);
  if (!Number.isFinite(now) || typeof iat !== 'number' || typeof exp !== 'number' || exp <= now) return false;
  return nbf === undefined || (typeof nbf === 'number' && nbf <= now);
}

/**
 * Verifies a JWT access token offline: signature with the local key set (by kid; any published key, so
 * rotation works), `typ: at+jwt` (an ID token is not an access token), issuer, audience, and expiry on the
 * gateway's clock. Undefined for anything that does not verify. Revocation is the caller's to check.
 */
export function verifyAccessToken(ctx: AccessTokenSigning, token: string): VerifiedAccessToken | undefined {
  const keys = ctx.keys;
  if (!keys) return undefined;
  const verified = verifyJws(keys.keys, token);
  if (!verified || !isAccessTokenType(verified.header.typ)) return undefined;
  if (!registeredClaimsHold(ctx, verified.claims)) return undefined;
  const { client_id: clientId, scope, purpose, grant_ids: grantIds, sub, jti, iat, exp } = verified.claims;
  const { single_use: singleUse, two_legged: twoLegged } = verified.claims;
  const confirmation = confirmationOf(verified.claims.cnf);
  if (!confirmation) return undefined;
  if (typeof clientId !== 'string' || typeof scope !== 'string' || typeof purpose !== 'string') return undefined;
  if (!Array.isArray(grantIds) || !grantIds.every((g): g is string => typeof g === 'string')) return undefined;
  if (typeof sub !== 'string' || typeof jti !== 'string') return undefined;
  if (typeof iat !== 'number' || typeof exp !== 'number') return undefined;
  let scopes: readonly string[];
  try {
    const parsed = parseScope(scope);
    if (parsed.purpose !== purpose) return undefined;
    scopes = Object.freeze(parsed.scopes);
  } catch {
    return undefined;
  }
  const sealed = verified.claims.subscriber_sealed;
  const subscriberId = twoLegged === true ? undefined : openSubscriber(verified.key.privateKey, jti, sealed);
  if (twoLegged !== true && subscriberId === undefined) return undefined;
  return {
    jti,
    clientId,
    subscriberId,
    singleUse: singleUse === true,
    purpose,
    scopes,
    scope,
    grantIds: Object.freeze(grantIds),
    issuedAt: iat * 1000,
    expiresAt: exp * 1000,
    jkt: confirmation.jkt,
    identifiedBy: readIdentification(verified.claims.identified_by),
    authorizedAt: authorizedAtClaim(verified.claims.authorized_at),
  };
}

/** `authorized_at` in epoch ms (rounded: seconds with a fraction do not multiply back exactly); 0 when absent. */
function authorizedAtClaim(claim: unknown): number {
  return typeof claim === 'number' && Number.isFinite(claim) ? Math.round(claim * 1000) : 0;
}
