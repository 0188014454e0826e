import { OAuthError } from '../../errors.js';
import { randomTag, sha256, taggedId } from '../../crypto.js';
import {
  placementTag,
  StoreUnavailableError,
  type RecordWrite,
  type Store,
  type StoredRecord,
} from '../../stores/store.js';
import type { StoredAuthorization } from '../requests/authorization.js';
import { CIBA_GRANT, type GrantType } from '../../registry/clients.js';
import type { SubscriberIdentification } from '../../identity/identification.js';
import { jtiOf, looksLikeJwt, signAccessToken } from './jwt-access-tokens.js';
import { authorizedAtOf, revokedError, type NotBeforeMarkers, type Presented } from '../levers/not-before.js';
import {
  redeemAgain,
  redeemedToken,
  redemptionWrite,
  type Presentation,
  type Redeemed,
  type RedemptionKeeping,
  type SealedAnswer,
} from './redemptions.js';
import type { ConsentPolicy } from '../../consent/policy.js';
import type { EventHub } from '../../ops/events.js';
import type { Lifetimes } from '../options.js';
import type { Revocations } from './revocations.js';
import type { AccessTokenSigning } from './jwt-access-tokens.js';

/** What the token policy of some scopes reads: the consent rules and the default lifetimes. */
export interface TokenPolicyReading {
  policy: ConsentPolicy;
  lifetimes: Required<Lifetimes>;
}

/** What finding a live access token uses: its record in the store, the clock, revocations and not-before markers. */
export interface AccessTokenFinding {
  store: Store;
  now: () => number;
  revocations: Revocations;
  notBefore: NotBeforeMarkers;
}

/** What issuing access tokens uses: all of the above, the format, the events, and where a late failure goes. */
export interface AccessTokenIssuing
  extends AccessTokenSigning,
    AccessTokenFinding,
    TokenPolicyReading,
    RedemptionKeeping {
  accessTokenFormat: 'opaque' | 'jwt';
  events: EventHub;
  onError: (error: unknown) => void;
}

/**
 * What an access token grants: an authorization of a subscriber, or none (`subscriberId` and `identifiedBy` null:
 * a two-legged token of the client credentials grant, CAMARA).
 */
export type TokenAuthorization = Omit<StoredAuthorization, 'subscriberId' | 'identifiedBy'> & {
  subscriberId: string | null;
  identifiedBy: SubscriberIdentification | null;
};

/** What the store keeps for an access token, under the SHA-256 of the token (never the token itself). */
export interface AccessTokenRecord extends TokenAuthorization {
  issuedAt: number;
  expiresAt: number;
  /** `jwt` tokens are verified offline by the guard; this record serves introspection and revocation. */
  format: 'opaque' | 'jwt';
  /** The JWT's `jti`; null for opaque tokens. */
  jti: string | null;
  /** Grant ids the token was issued under (also the store's grant index of this record). */
  grants: string[];
  /** Good for one API call (the scope's policy rule): the guard consumes this record. False in records of older versions too. */
  singleUse: boolean;
  /** RFC 9449 `cnf.jkt`: the thumbprint of the DPoP key the token is bound to; null when unbound (absent in older records). */
  jkt: string | null;
  [key: string]: string | number | boolean | null | string[];
}

export interface TokenResponse {
  access_token: string;
  /** `DPoP` when the token is bound to a DPoP key (RFC 9449 §5). */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  id_token?: string;
  refresh_token?: string;
}

/** A refresh token made for an issue (lib/gateway/tokens/refresh-tokens.ts): the token, and its record to write with the access token. */
export interface MintedRefreshToken {
  token: string;
  write: RecordWrite;
  /** Derived from the value a redemption presented (`redeemedToken`), so a retry derives it again. */
  derived: boolean;
}

/**
 * How a grant issues its tokens. The token endpoint settles one such object per request, the same whichever
 * grant runs (`Grant.exchange` passes it on); a grant that issues a refresh token adds it.
 */
export interface IssueOptions {
  /** RFC 9449: the JWK SHA-256 thumbprint of the DPoP proof's key; the token is bound to it (`cnf.jkt`). */
  dpopJkt?: string | undefined;
  /** A refresh token to issue with the access token, in the same atomic step (code, CIBA and refresh grants). */
  refresh?: MintedRefreshToken | undefined;
  /** The longest lifetime this grant gives (the backend grants' `lifetimes.backendAccessToken`), in seconds. */
  maxLifetime?: number | undefined;
  /**
   * Whether the operator revoked the subscriber or client of what is exchanged (`askRevoked`), asked for just before:
   * the markers' reads share the consume's round trip. When it refuses, nothing is handed out (the tokens just
   * written are deleted) and the grant answers invalid_grant.
   */
  revoked?: Promise<boolean> | undefined;
}

/**
 * Store key of a token: its SHA-256, so a leaked store reveals no usable token, after the token's placement tag
 * (an opaque token's own, a JWT's `jti`'s), so the record lands where its grant's records are.
 */
export function tokenKey(token: string): string {
  const tag = placementTag(looksLikeJwt(token) ? jtiOf(token) : token);
  const hash = sha256(token);
  return tag === undefined ? hash : `${tag}.${hash}`;
}

/**
 * What a token is exchanged for (a code, an auth_req_id, a refresh token), with the value presented: consumed in the
 * same atomic step as the token is stored, which also keeps a redemption record for the same client's retry
 * (lib/gateway/tokens/redemptions.ts).
 */
export type ExchangedRecord = Redeemed;

const GRANT_OF: Record<Presentation['kind'], GrantType> = {
  code: 'authorization_code',
  backchannel: CIBA_GRANT,
  refresh_token: 'refresh_token',
};

const PRESENTED: Record<Presentation['kind'], Presented> = {
  code: 'code',
  backchannel: 'auth_req_id',
  refresh_token: 'refresh_token',
};

/**
 * The access token's lifetime and use for these scopes (per-scope token policy, the rules' `accessTokenLifetime`
 * and `singleUseAccessToken`): the shortest lifetime of their rules, and single use if any rule asks for it.
 */
export function accessTokenPolicy(
  ctx: TokenPolicyReading,
  purpose: string,
  scopes: readonly string[],
): { lifetime: number; singleUse: boolean } {
  let lifetime = ctx.lifetimes.accessToken;
  let singleUse = false;
  for (const scope of scopes) {
    const rule = ctx.policy.rule(purpose, scope);
    if (rule?.accessTokenLifetime !== undefined) lifetime = Math.min(lifetime, rule.accessTokenLifetime);
    if (rule?.singleUseAccessToken === true) singleUse = true;
  }
  return { lifetime, singleUse };
}

/**
 * Issues an access token in the configured format: opaque (256 random bits) or an RFC 9068 JWT, carrying the
 * placement tag of the authorization's own grant, with the lifetime and use the scopes' policy gives it. Either
 * way the store keeps a record under `tokenKey`, written with its grants: the authorization's own grant and the
 * consents it rests on, so revoking either revokes the token. The record (and a refresh token's, if one is
 * issued) is written by the store's `consume` of what the token is exchanged for (`exchanged`), in the same
 * atomic step: a failure leaves both or neither, so it never burns an approved request, and a replay that finds
 * the code used always finds its token. Undefined when `exchanged` was already used. Grants that consume nothing
 * (client credentials, JWT bearer, whose assertion's `jti` is already spent) just write the record.
 *
 * Consent withdrawn while the token is issued (the grant read the consent as live, then `consent.revoke()`
 * ran before this write) must not leave a token behind: the revocation deleted the grant's records before
 * this one existed. So, once the record is written, the consents' revocation-list entries are read again.
 * `Revocations.revokeGrants` writes the entry before it deletes the records, so either the entry is seen here
 * (the record is deleted and the grant refused with invalid_grant: no token is handed out), or the revocation
 * had not begun when the record was written and its `revokeGrant` deletes it. The guard and introspection then
 * agree on every instance without the guard reading the list on each call; only tokens resting on consent pay
 * the extra reads, at issue. They are read once before too: a revocation list that cannot be read (its Redis
 * shard failing over) is then a 503 that uses nothing up, and the rare failure of the second read alone costs
 * the request (its token deleted, never handed out).
 */
export async function issueAccessToken(
  ctx: AccessTokenIssuing,
  authorization: TokenAuthorization,
  grantId: string,
  consentGrants: readonly string[],
  exchanged: undefined,
  options?: IssueOptions,
): Promise<TokenResponse>;
export async function issueAccessToken(
  ctx: AccessTokenIssuing,
  authorization: TokenAuthorization,
  grantId: string,
  consentGrants: readonly string[],
  exchanged: ExchangedRecord,
  options?: IssueOptions,
): Promise<TokenResponse | undefined>;
export async function issueAccessToken(
  ctx: AccessTokenIssuing,
  authorization: TokenAuthorization,
  grantId: string,
  consentGrants: readonly string[],
  exchanged: ExchangedRecord | undefined,
  options: IssueOptions = {},
): Promise<TokenResponse | undefined> {
  const jkt = options.dpopJkt ?? null;
  const grants = [grantId, ...consentGrants];
  const withdrawn = () => new OAuthError('invalid_grant', 'the consent this grant rests on was withdrawn');
  if (consentGrants.length > 0 && (await ctx.revocations.isAnyGrantRevoked(consentGrants))) throw withdrawn();
  const policy = accessTokenPolicy(ctx, authorization.purpose, authorization.scopes);
  const lifetime = Math.min(policy.lifetime, options.maxLifetime ?? policy.lifetime);
  const singleUse = policy.singleUse;
  const tag = placementTag(grantId) ?? randomTag();
  let issuedAt = ctx.now();
  let token: string;
  let jti: string | null = null;
  if (ctx.accessTokenFormat === 'jwt') {
    // Whole seconds, so the record and the JWT's iat/exp agree.
    issuedAt = Math.floor(issuedAt / 1000) * 1000;
    jti = taggedId(tag, 16);
    token = signAccessToken(ctx, {
      clientId: authorization.clientId,
      subscriberId: authorization.subscriberId,
      scope: authorization.scope,
      purpose: authorization.purpose,
      grants,
      jti,
      iat: issuedAt / 1000,
      exp: issuedAt / 1000 + lifetime,
      singleUse,
      identifiedBy: authorization.identifiedBy,
      authorizedAt: authorization.authorizedAt,
      ...(jkt === null ? {} : { jkt }),
    });
  } else {
    // Derived from the presented value when redeemed (a retry derives it again: redemptions.ts).
    token = exchanged ? redeemedToken(exchanged, 'access', tag) : taggedId(tag, 32);
  }
  const { clientId, subscriberId, phoneNumber, purpose, scopes, scope, identifiedBy, authorizedAt } = authorization;
  const record: AccessTokenRecord = {
    clientId,
    authorizedAt,
    subscriberId,
    phoneNumber,
    purpose,
    scopes,
    scope,
    identifiedBy,
    issuedAt,
    expiresAt: issuedAt + lifetime * 1000,
    format: ctx.accessTokenFormat,
    jti,
    grants,
    singleUse,
    jkt,
  };
  const key = tokenKey(token);
  const writes: RecordWrite[] = [{ kind: 'access_token', id: key, value: record, options: { ttl: lifetime, grants } }];
  if (options.refresh) writes.push(options.refresh.write);
  const response: TokenResponse = {
    access_token: token,
    token_type: jkt === null ? 'Bearer' : 'DPoP',
    expires_in: lifetime,
    scope: authorization.scope,
  };
  if (options.refresh) response.refresh_token = options.refresh.token;
  if (exchanged) {
    // Under its own grant only (on this shard: no extra round trip); a consent withdrawn deletes the token, and
    // a redemption whose token is gone is never handed out again.
    const derived = ctx.accessTokenFormat === 'opaque' && (options.refresh?.derived ?? true);
    writes.push(redemptionWrite(ctx, exchanged, clientId, jkt, response, [grantId], derived));
    let consumed: boolean;
    try {
      consumed = await ctx.store.consume(exchanged.kind, exchanged.id, writes);
    } catch (error) {
      // Sent, but not answered: the step may have run, its tokens waiting for the client's retry (redemptions.ts).
      if (error instanceof StoreUnavailableError)
        ctx.events.emit('redemption.unsettled', { clientId, grantType: GRANT_OF[exchanged.kind] });
      throw error;
    }
    let revoked = false;
    if (options.revoked !== undefined) {
      try {
        revoked = await options.revoked;
      } catch (error) {
        // Unread (503): tokens this call wrote wait for the client's retry, which reads the markers again first.
        if (consumed && error instanceof StoreUnavailableError)
          ctx.events.emit('redemption.unsettled', { clientId, grantType: GRANT_OF[exchanged.kind] });
        throw error;
      }
    }
    // Also when this call lost the consume: then the caller would hand on the winner's tokens.
    if (revoked) {
      // Never handed out; a deletion that fails leaves records the markers refuse wherever they are presented.
      if (consumed) await discardAll(ctx, writes).catch(ctx.onError);
      throw revokedError(PRESENTED[exchanged.kind]);
    }
    if (!consumed) return undefined;
  } else {
    for (const write of writes) await ctx.store.put(write.kind, write.id, write.value, write.options);
  }
  if (consentGrants.length > 0) {
    const discard = () => discardAll(ctx, writes);
    let revoked: boolean;
    try {
      revoked = await ctx.revocations.isAnyGrantRevoked(consentGrants);
    } catch (error) {
      // Not known to be live: the tokens are not handed out, and their records go.
      await discard().catch(ctx.onError);
      throw error;
    }
    if (revoked) {
      await discard();
      throw withdrawn();
    }
  }
  return response;
}

/** Deletes the records an issue wrote (its tokens are not handed out), side by side: one round trip. */
async function discardAll(ctx: Pick<AccessTokenIssuing, 'store'>, writes: readonly RecordWrite[]): Promise<void> {
  await Promise.all(writes.map((write) => ctx.store.delete(write.kind, write.id)));
}

/** The access token's record when neither it (a single-use token) nor the refresh token issued with it was used. */
async function unused(ctx: AccessTokenFinding, answer: SealedAnswer): Promise<AccessTokenRecord | undefined> {
  if (answer.refresh_token !== undefined) {
    const refresh = await ctx.store.get('refresh_token', tokenKey(answer.refresh_token));
    if (!refresh || refresh.consumed) return undefined;
  }
  return findAccessToken(ctx, answer.access_token);
}

/**
 * The tokens an earlier redemption of `exchanged` issued, for a retry by the same client with the same DPoP key
 * (`dpopJkt`) within `lifetimes.redemptionRetry` while they are unused (lib/gateway/tokens/redemptions.ts), reported
 * as `redemption.redelivered`; undefined otherwise (the caller answers a replay). Never a new token.
 */
export async function redeemedBefore(
  ctx: AccessTokenFinding & RedemptionKeeping & { events: EventHub },
  exchanged: Presentation,
  clientId: string,
  dpopJkt: string | undefined,
): Promise<TokenResponse | undefined> {
  const tokens = await redeemAgain(ctx, exchanged, clientId, dpopJkt ?? null, (answer) => unused(ctx, answer));
  if (tokens) ctx.events.emit('redemption.redelivered', { clientId, grantType: GRANT_OF[exchanged.kind] });
  return tokens;
}

/** Reports an issue as `token.issued`: who, for what, by which grant, and how; never a token. */
export function reportIssued(
  ctx: TokenPolicyReading & Pick<AccessTokenIssuing, 'accessTokenFormat' | 'events'>,
  authorization: TokenAuthorization,
  grantType: GrantType,
  tokens: TokenResponse,
): void {
  // The payload looks the token policy up again: not worth it for an event nobody listens to.
  if (!ctx.events.has('token.issued')) return;
  const { clientId, subscriberId, purpose, scopes, identifiedBy } = authorization;
  ctx.events.emit('token.issued', {
    clientId,
    ...(subscriberId === null ? {} : { subscriberId }),
    ...(identifiedBy === null ? {} : { identifiedBy }),
    purpose,
    scopes,
    grantType,
    format: ctx.accessTokenFormat,
    idToken: tokens.id_token !== undefined,
    refreshToken: tokens.refresh_token !== undefined,
    singleUse: accessTokenPolicy(ctx, purpose, scopes).singleUse,
  });
}

/**
 * Uses up a single-use token: of any number of concurrent calls, on every store, exactly one gets true (the
 * store's atomic `consume`). False when the token was used, revoked (its record deleted) or never stored.
 */
export function consumeSingleUseToken(ctx: Pick<AccessTokenFinding, 'store'>, token: string): Promise<boolean> {
  return ctx.store.consume('access_token', tokenKey(token));
}

/**
 * The live record of a presented token, or undefined (unknown, expired or revoked). The one answer the guard
 * (opaque tokens) and introspection share: every revocation path deletes the record, the revocation list this
 * process knows is checked too, with no I/O, and so are the subscriber's and client's not-before markers (the
 * operator's levers): read from the store (`markers: 'store'`), or as this process read them in the last seconds
 * (`recent`, the guard's `revocation: 'local'`).
 */
export async function findAccessToken(
  ctx: AccessTokenFinding,
  token: string,
  markers: 'store' | 'recent' = 'store',
): Promise<AccessTokenRecord | undefined> {
  const record = liveRecord(ctx, await ctx.store.get<AccessTokenRecord>('access_token', tokenKey(token)));
  if (record === undefined) return undefined;
  const authorized = { ...record, authorizedAt: authorizedAtOf(record) };
  const refused =
    markers === 'store' ? await ctx.notBefore.refuses(authorized) : await ctx.notBefore.refusesRecently(authorized);
  return refused ? undefined : record;
}

function liveRecord(
  ctx: Pick<AccessTokenFinding, 'now' | 'revocations'>,
  stored: StoredRecord<AccessTokenRecord> | undefined,
): AccessTokenRecord | undefined {
  // A consumed record is a single-use token that has had its one call.
  if (!stored || stored.consumed || stored.value.expiresAt <= ctx.now()) return undefined;
  const record = stored.value;
  if (ctx.revocations.isRevokedLocally(record.jti ?? '', record.grants ?? [])) return undefined;
  return record;
}
