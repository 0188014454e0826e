import { randomId, sha256 } from '../../crypto.js';
import type { GatewayContext } from '../context.js';
import { authorizationOf, type StoredAuthorization } from '../requests/authorization.js';
import { signAccessToken } from './jwt-access-tokens.js';

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

/** Store key of a token: a leaked store reveals no usable token. */
export function tokenKey(token: string): string {
  return sha256(token);
}

/**
 * Issues an access token in the configured format: opaque (256 random bits) or an RFC 9068 JWT. Either way
 * the store keeps a record under the SHA-256 of the token, written with `grants`: the authorization's own
 * grant and the consents it rests on, so revoking either revokes the token.
 */
export async function issueAccessToken(ctx: GatewayContext, authorization: StoredAuthorization, grants: string[]): Promise<TokenResponse> {
  const lifetime = ctx.lifetimes.accessToken;
  let issuedAt = ctx.now();
  let token: string;
  let jti: string | null = null;
  if (ctx.accessTokenFormat === 'jwt') {
    // Whole seconds, so the record and the JWT's iat/exp agree.
    issuedAt = Math.floor(issuedAt / 1000) * 1000;
    jti = randomId(16);
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
    token = randomId(32);
  }
  const record: AccessTokenRecord = {
    ...authorizationOf(authorization),
    issuedAt,
    expiresAt: issuedAt + lifetime * 1000,
    format: ctx.accessTokenFormat,
    jti,
    grants,
  };
  await ctx.store.put('access_token', tokenKey(token), record, { ttl: lifetime, grants });
  return { access_token: token, token_type: 'Bearer', expires_in: lifetime, scope: authorization.scope };
}

/** The live record of a presented token, or undefined (unknown, expired or revoked). */
export async function findAccessToken(ctx: GatewayContext, token: string): Promise<AccessTokenRecord | undefined> {
  const stored = await ctx.store.get<AccessTokenRecord>('access_token', tokenKey(token));
  if (!stored || stored.value.expiresAt <= ctx.now()) return undefined;
  return stored.value;
}
