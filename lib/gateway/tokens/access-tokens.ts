import { OAuthError } from '../../errors.js';
import { randomTag, sha256, taggedId } from '../../crypto.js';
import { placementTag, type RecordKind } from '../../stores/store.js';
import type { GatewayContext } from '../context.js';
import { authorizationOf, type StoredAuthorization } from '../requests/authorization.js';
import { jtiOf, looksLikeJwt, signAccessToken } from './jwt-access-tokens.js';

/** What the store keeps for an access token, under the SHA-256 of the token (never the token itself). */
export interface AccessTokenRecord extends StoredAuthorization {
  issuedAt: number;
  expiresAt: number;
  /** `jwt` tokens are verified offline by the guard; this record serves introspection and revocation. */
  format: 'opaque' | 'jwt';
  /** The JWT's `jti`; null for opaque tokens. */
  jti: string | null;
  /** Grant ids the token was issued under (also the store's grant index of this record). */
  grants: string[];
  /** RFC 9449 `cnf.jkt`: the thumbprint of the DPoP key the token is bound to; null when unbound (absent in older records). */
  jkt: string | null;
  [key: string]: string | number | null | string[];
}

export interface TokenResponse {
  access_token: string;
  /** `DPoP` when the token is bound to a DPoP key (RFC 9449 §5). */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  id_token?: string;
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

/** The code or auth_req_id a token is exchanged for: consumed in the same atomic step as the token is stored. */
export interface ExchangedRecord {
  kind: RecordKind;
  id: string;
}

/** What the token endpoint settled for the request, the same whichever grant runs (`Grant.exchange` passes it on). */
export interface IssueOptions {
  /** RFC 9449: the JWK SHA-256 thumbprint of the DPoP proof's key; the token is bound to it (`cnf.jkt`). */
  dpopJkt?: string | undefined;
}

/**
 * Issues an access token in the configured format: opaque (256 random bits) or an RFC 9068 JWT, carrying the
 * placement tag of the authorization's own grant. Either way the store keeps a record under `tokenKey`, written
 * with its grants: the authorization's own grant and the consents it rests on, so revoking either revokes the
 * token. The record is written by the store's `consume` of what the token is exchanged for (`exchanged`), in
 * the same atomic step: a failure leaves both or neither, so it never burns an approved request, and a replay
 * that finds the code used always finds its token. Undefined when `exchanged` was already used.
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
  ctx: GatewayContext,
  authorization: StoredAuthorization,
  grantId: string,
  consentGrants: readonly string[],
  exchanged: ExchangedRecord,
  options: IssueOptions = {},
): Promise<TokenResponse | undefined> {
  const jkt = options.dpopJkt ?? null;
  const grants = [grantId, ...consentGrants];
  const withdrawn = () => new OAuthError('invalid_grant', 'the consent this grant rests on was withdrawn');
  if (consentGrants.length > 0 && (await ctx.revocations.isAnyGrantRevoked(consentGrants))) throw withdrawn();
  const lifetime = ctx.lifetimes.accessToken;
  const tag = placementTag(grantId) ?? randomTag();
  let issuedAt = ctx.now();
  let token: string;
  let jti: string | null = null;
  if (ctx.accessTokenFormat === 'jwt') {
    // Whole seconds, so the record and the JWT's iat/exp agree.
    issuedAt = Math.floor(issuedAt / 1000) * 1000;
    jti = taggedId(tag, 16);
    token = await signAccessToken(ctx, {
      clientId: authorization.clientId,
      subscriberId: authorization.subscriberId,
      scope: authorization.scope,
      purpose: authorization.purpose,
      grants,
      jti,
      iat: issuedAt / 1000,
      exp: issuedAt / 1000 + lifetime,
      ...(jkt === null ? {} : { jkt }),
    });
  } else {
    token = taggedId(tag, 32);
  }
  const record: AccessTokenRecord = {
    ...authorizationOf(authorization),
    issuedAt,
    expiresAt: issuedAt + lifetime * 1000,
    format: ctx.accessTokenFormat,
    jti,
    grants,
    jkt,
  };
  const key = tokenKey(token);
  if (!(await ctx.store.consume(exchanged.kind, exchanged.id, [{ kind: 'access_token', id: key, value: record, options: { ttl: lifetime, grants } }]))) {
    return undefined;
  }
  if (consentGrants.length > 0) {
    let revoked: boolean;
    try {
      revoked = await ctx.revocations.isAnyGrantRevoked(consentGrants);
    } catch (error) {
      // Not known to be live: the token is not handed out, and its record goes.
      await ctx.store.delete('access_token', key).catch(ctx.onError);
      throw error;
    }
    if (revoked) {
      await ctx.store.delete('access_token', key);
      throw withdrawn();
    }
  }
  return { access_token: token, token_type: jkt === null ? 'Bearer' : 'DPoP', expires_in: lifetime, scope: authorization.scope };
}

/**
 * The live record of a presented token, or undefined (unknown, expired or revoked). The one answer the guard
 * (opaque tokens) and introspection share: every revocation path deletes the record, and the revocation list
 * this process knows is checked too, with no I/O.
 */
export async function findAccessToken(ctx: GatewayContext, token: string): Promise<AccessTokenRecord | undefined> {
  const stored = await ctx.store.get<AccessTokenRecord>('access_token', tokenKey(token));
  if (!stored || stored.value.expiresAt <= ctx.now()) return undefined;
  const record = stored.value;
  if (ctx.revocations.isRevokedLocally(record.jti ?? '', record.grants ?? [])) return undefined;
  return record;
}
