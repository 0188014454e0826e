import { createHash, timingSafeEqual } from 'node:crypto';
import { randomId } from '../../crypto.js';
import { OAuthError } from '../../errors.js';
import { authorizationOf, type StoredAuthorization } from '../authorization.js';
import type { GatewayContext } from '../context.js';
import type { Grant } from './grant.js';
import { issueAccessToken, tokenKey } from '../access-tokens.js';
import { idTokenRequested, issueIdToken } from '../id-tokens.js';
import { revokeGrant } from '../revocations.js';
import { overLimit } from '../rate-limits.js';

/** An authorization code as stored under the code itself (kind `code`). */
export interface CodeRecord extends StoredAuthorization {
  /** The redirect_uri the code was delivered to; the token request must repeat it exactly. */
  redirectUri: string;
  /** S256 challenge, or null when the code was issued without PKCE (then a code_verifier is refused). */
  codeChallenge: string | null;
  /** OIDC nonce, kept for the ID token. */
  nonce: string | null;
  /** The code's own grant: tokens issued from it carry it, and a replay revokes it. */
  grantId: string;
  /** Grants of the consent records the code rests on. */
  consentGrants: string[];
  issuedAt: number;
  expiresAt: number;
  [key: string]: string | number | null | string[];
}

/** What a code is issued for: a validated authorization request, its subscriber identified, consent settled. */
export interface CodeRequest extends StoredAuthorization {
  redirectUri: string;
  codeChallenge: string | null;
  nonce: string | null;
  consentGrants: string[];
}

/** RFC 7636 §4.1: 43..128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** BASE64URL(SHA256(verifier)): always 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** Issues a single-use code: 256 random bits, base64url. */
export async function createAuthorizationCode(ctx: GatewayContext, request: CodeRequest): Promise<string> {
  const code = randomId(32);
  const issuedAt = ctx.now();
  const record: CodeRecord = {
    ...authorizationOf(request),
    redirectUri: request.redirectUri,
    codeChallenge: request.codeChallenge,
    nonce: request.nonce,
    grantId: randomId(16),
    consentGrants: request.consentGrants,
    issuedAt,
    expiresAt: issuedAt + ctx.lifetimes.code * 1000,
  };
  // Written with the consent grants too: withdrawing consent before redemption kills the code as well.
  await ctx.store.put('code', code, record, { ttl: ctx.lifetimes.code, grants: [record.grantId, ...record.consentGrants] });
  ctx.events.emit('code.issued', {
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    scopes: record.scopes,
    pkce: record.codeChallenge !== null,
  });
  return code;
}

function verifyPkce(record: CodeRecord, verifier: string | undefined): void {
  if (record.codeChallenge === null) {
    // Downgrade protection (RFC 9700 §2.1.1): a verifier for a code issued without a challenge is refused.
    if (verifier !== undefined) throw new OAuthError('invalid_grant', 'code_verifier sent for a code issued without a code_challenge');
    return;
  }
  if (verifier === undefined) throw new OAuthError('invalid_grant', 'code_verifier is required');
  if (!VERIFIER.test(verifier)) throw new OAuthError('invalid_grant', 'code_verifier is malformed');
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(record.codeChallenge);
  if (computed.length !== expected.length || !timingSafeEqual(computed, expected)) {
    throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
  }
}

async function replayed(ctx: GatewayContext, record: CodeRecord): Promise<OAuthError> {
  // RFC 6749 §4.1.2 / RFC 9700 §4.5: the code was used before; every token issued from it is revoked
  // (records deleted, and JWT access tokens listed as revoked).
  await revokeGrant(ctx, record.grantId);
  ctx.events.emit('code.replayed', { clientId: record.clientId, subscriberId: record.subscriberId, purpose: record.purpose, scopes: record.scopes });
  ctx.events.emit('token.revoked', { clientId: record.clientId, subscriberId: record.subscriberId, purpose: record.purpose, reason: 'code_replay' });
  return new OAuthError('invalid_grant', 'the code was already used');
}

export const authorizationCodeGrant: Grant = {
  type: 'authorization_code',
  async exchange(ctx, client, params) {
    const code = params.require('code');
    const redirectUri = params.require('redirect_uri');
    const verifier = params.get('code_verifier');

    // Everything is checked before the code is consumed, so a bad request does not burn it.
    const stored = await ctx.store.get<CodeRecord>('code', code);
    // Another client's code is answered exactly like an unknown one.
    if (!stored || stored.value.clientId !== client.clientId) throw new OAuthError('invalid_grant', 'unknown code');
    const record = stored.value;
    if (record.expiresAt <= ctx.now()) throw new OAuthError('invalid_grant', 'the code has expired');
    if (redirectUri !== record.redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri differs from the authorization request');
    verifyPkce(record, verifier);
    if (stored.consumed) throw await replayed(ctx, record);
    if (ctx.limits) {
      // Before anything is issued: the code stays redeemable (until it expires) for a retry after Retry-After.
      const retryAfter = await ctx.limits.subscriber('token', record.subscriberId);
      if (retryAfter !== undefined) {
        throw overLimit(ctx.events, { endpoint: 'token', limit: 'subscriber', clientId: record.clientId, subscriberId: record.subscriberId, retryAfter });
      }
    }

    // The token is written BEFORE the code is consumed: a replay that revokes the grant at any later moment
    // therefore always finds it. Of concurrent redemptions exactly one wins the consume.
    const tokens = await issueAccessToken(ctx, record, [record.grantId, ...record.consentGrants]);
    let won: boolean;
    try {
      won = await ctx.store.consume('code', code);
    } catch (error) {
      await ctx.store.delete('access_token', tokenKey(tokens.access_token)).catch(ctx.onError);
      throw error;
    }
    // The loser's own token goes with the grant the replay revokes.
    if (!won) throw await replayed(ctx, record);
    if (idTokenRequested(ctx, record.scope)) {
      tokens.id_token = await issueIdToken(ctx, {
        clientId: record.clientId,
        subscriber: { id: record.subscriberId },
        // The network identified the subscriber when the code was issued.
        authTime: record.issuedAt,
        ...(record.nonce === null ? {} : { nonce: record.nonce }),
        accessToken: tokens.access_token,
      });
    }
    const subject = { clientId: record.clientId, subscriberId: record.subscriberId, purpose: record.purpose, scopes: record.scopes };
    ctx.events.emit('code.consumed', subject);
    ctx.events.emit('token.issued', { ...subject, grantType: 'authorization_code', format: ctx.accessTokenFormat, idToken: tokens.id_token !== undefined });
    return tokens;
  },
};
