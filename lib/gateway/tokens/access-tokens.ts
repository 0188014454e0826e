import { randomTag, sha256, taggedId } from '../../crypto.js';
import { placementTag, type RecordWrite } from '../../stores/store.js';
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
  [key: string]: string | number | null | string[];
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
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

/**
 * Mints an access token in the configured format: opaque (256 random bits) or an RFC 9068 JWT, carrying the
 * placement tag of the authorization's own grant (`grants[0]`). Returns the token response and the store
 * write of its record (under `tokenKey`, with `grants`: the authorization's own grant and the consents it
 * rests on, so revoking either revokes the token), for the grant to make together with consuming its code or
 * auth_req_id: one atomic step, so a failure never leaves one without the other.
 */
export async function mintAccessToken(
  ctx: GatewayContext,
  authorization: StoredAuthorization,
  grants: string[],
): Promise<{ tokens: TokenResponse; write: RecordWrite }> {
  const lifetime = ctx.lifetimes.accessToken;
  const tag = placementTag(grants[0] ?? '') ?? randomTag();
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
  };
  return {
    tokens: { access_token: token, token_type: 'Bearer', expires_in: lifetime, scope: authorization.scope },
    write: { kind: 'access_token', id: tokenKey(token), value: record, options: { ttl: lifetime, grants } },
  };
}

/** The live record of a presented token, or undefined (unknown, expired or revoked). */
export async function findAccessToken(ctx: GatewayContext, token: string): Promise<AccessTokenRecord | undefined> {
  const stored = await ctx.store.get<AccessTokenRecord>('access_token', tokenKey(token));
  if (!stored || stored.value.expiresAt <= ctx.now()) return undefined;
  return stored.value;
}
