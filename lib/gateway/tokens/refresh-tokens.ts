import { randomTag, taggedId } from '../../crypto.js';
import type { RegisteredClient } from '../../registry/clients.js';
import { placementTag, type Store, type StoredRecord } from '../../stores/store.js';
import type { Lifetimes } from '../options.js';
import { authorizationOf, type StoredAuthorization } from '../requests/authorization.js';
import { tokenKey, type MintedRefreshToken } from './access-tokens.js';
import { redeemedToken, type Redeemed } from './redemptions.js';

/**
 * What the store keeps for a refresh token (kind `refresh_token`), under the SHA-256 of the token, never the token.
 * It stays readable after its use (the store's `consume`), until it expires, so a rotated-out token presented
 * again is recognised as a reuse (RFC 9700 §4.14.2).
 */
export interface RefreshTokenRecord extends StoredAuthorization {
  /** The grant of the code or auth_req_id it came from: every token of the grant carries it, and a reuse revokes it. */
  grantId: string;
  /** The consents the grant rests on (also in the store's grant index of this record): withdrawing one deletes it. */
  consentGrants: string[];
  issuedAt: number;
  expiresAt: number;
  /**
   * The DPoP key thumbprint the grant's access tokens were bound to; null (absent in older records) when unbound.
   * A refresh of a bound grant must carry a proof again, so it never turns into a Bearer token.
   */
  jkt: string | null;
  [key: string]: string | number | null | string[];
}

/**
 * Mints a refresh token for an authorization: 256 random bits after the grant's placement tag (a sharded store
 * keeps it with the grant's other records), stored hashed, written with the grant and its consents (revoking
 * either deletes it). The caller writes it with the access token, in the same atomic step.
 */
/** What refresh tokens use: the store that keeps them, the clock and their lifetime. */
export interface RefreshTokenKeeping {
  store: Store;
  now: () => number;
  lifetimes: Required<Lifetimes>;
}

export function mintRefreshToken(
  ctx: Pick<RefreshTokenKeeping, 'now' | 'lifetimes'>,
  authorization: StoredAuthorization,
  grantId: string,
  consentGrants: readonly string[],
  jkt: string | undefined,
  from?: Redeemed,
): MintedRefreshToken {
  const tag = placementTag(grantId) ?? randomTag();
  // Issued for a redemption: derived from the presented value, so a retry derives it again (redemptions.ts).
  const token = from ? redeemedToken(from, 'refresh', tag) : taggedId(tag, 32);
  const issuedAt = ctx.now();
  const lifetime = ctx.lifetimes.refreshToken;
  const record: RefreshTokenRecord = {
    ...authorizationOf(authorization),
    grantId,
    consentGrants: [...consentGrants],
    issuedAt,
    expiresAt: issuedAt + lifetime * 1000,
    jkt: jkt ?? null,
  };
  return {
    token,
    derived: from !== undefined,
    write: {
      kind: 'refresh_token',
      id: tokenKey(token),
      value: record,
      options: { ttl: lifetime, grants: [grantId, ...consentGrants] },
    },
  };
}

/**
 * The refresh token the code and CIBA grants issue with the access token, when the authorization may have one
 * (the CAMARA profile): `offline_access` granted, and the client registered for `refresh_token`.
 */
export function offeredRefreshToken(
  ctx: RefreshTokenKeeping,
  client: RegisteredClient,
  authorization: StoredAuthorization,
  grantId: string,
  consentGrants: readonly string[],
  jkt: string | undefined,
  from?: Redeemed,
): MintedRefreshToken | undefined {
  if (!client.grantTypes.includes('refresh_token') || !authorization.scope.split(' ').includes('offline_access'))
    return undefined;
  return mintRefreshToken(ctx, authorization, grantId, consentGrants, jkt, from);
}

/** The stored record of a presented refresh token, used or not (expired ones included), or undefined. */
export function findRefreshToken(
  ctx: Pick<RefreshTokenKeeping, 'store'>,
  token: string,
): Promise<StoredRecord<RefreshTokenRecord> | undefined> {
  return ctx.store.get<RefreshTokenRecord>('refresh_token', tokenKey(token));
}
