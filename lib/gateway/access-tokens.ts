import { createHash, randomBytes } from 'node:crypto';
import type { GatewayContext } from './context.js';
import type { Authorization } from './authorization.js';

/** What the store keeps for an access token, under the SHA-256 of the token (never the token itself). */
export interface AccessTokenRecord {
  clientId: string;
  subscriberId: string;
  phoneNumber: string | null;
  purpose: string;
  scopes: string[];
  scope: string;
  issuedAt: number;
  expiresAt: number;
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
  return createHash('sha256').update(token).digest('base64url');
}

/** Opaque bearer token: 256 random bits. */
export async function issueAccessToken(ctx: GatewayContext, authorization: Authorization): Promise<TokenResponse> {
  const token = randomBytes(32).toString('base64url');
  const issuedAt = ctx.now();
  const lifetime = ctx.lifetimes.accessToken;
  const record: AccessTokenRecord = {
    clientId: authorization.clientId,
    subscriberId: authorization.subscriber.id,
    phoneNumber: authorization.subscriber.phoneNumber ?? null,
    purpose: authorization.purpose,
    scopes: authorization.scopes,
    scope: authorization.scope,
    issuedAt,
    expiresAt: issuedAt + lifetime * 1000,
  };
  await ctx.store.put('access_token', tokenKey(token), record, { ttl: lifetime, grants: authorization.grants });
  return { access_token: token, token_type: 'Bearer', expires_in: lifetime, scope: authorization.scope };
}

/** The live record of a presented token, or undefined (unknown, expired or revoked). */
export async function findAccessToken(ctx: GatewayContext, token: string): Promise<AccessTokenRecord | undefined> {
  const stored = await ctx.store.get<AccessTokenRecord>('access_token', tokenKey(token));
  if (!stored || stored.value.expiresAt <= ctx.now()) return undefined;
  return stored.value;
}
