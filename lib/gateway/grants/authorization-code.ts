import { createHash, timingSafeEqual } from 'node:crypto';
import { hashedRecordId } from '../../crypto.js';
import { OAuthError } from '../../errors.js';
import type { CodeRecord } from '../requests/authorization-codes.js';
import type { Grant, GrantCollaborators } from './grant.js';
import { issueAccessToken, redeemedBefore, reportIssued, type TokenResponse } from '../tokens/access-tokens.js';
import { redemptionOf } from '../tokens/redemptions.js';
import { offeredRefreshToken } from '../tokens/refresh-tokens.js';
import { idTokenRequested, issueIdToken } from '../tokens/id-tokens.js';
import { limitSubscriber } from '../requests/subscriber-limit.js';
import { askRevoked, revokedError } from '../levers/not-before.js';

/** RFC 7636 §4.1: 43..128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

function verifyPkce(record: CodeRecord, verifier: string | undefined): void {
  if (record.codeChallenge === null) {
    // Downgrade protection (RFC 9700 §2.1.1): a verifier for a code issued without a challenge is refused.
    if (verifier !== undefined)
      throw new OAuthError('invalid_grant', 'code_verifier sent for a code issued without a code_challenge');
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

async function replayed(ctx: GrantCollaborators, record: CodeRecord): Promise<OAuthError> {
  // RFC 6749 §4.1.2 / RFC 9700 §4.5: the code was used before; every token issued from it is revoked
  // (records deleted, and JWT access tokens listed as revoked).
  await ctx.revocations.revokeGrants([record.grantId]);
  ctx.events.emit('code.replayed', {
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    scopes: record.scopes,
  });
  ctx.events.emit('token.revoked', {
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    reason: 'code_replay',
  });
  return new OAuthError('invalid_grant', 'the code was already used');
}

export const authorizationCodeGrant: Grant = {
  type: 'authorization_code',
  async exchange(ctx, client, params, _req, options) {
    const code = params.require('code');
    const redirectUri = params.require('redirect_uri');
    const verifier = params.get('code_verifier');

    // Everything is checked before the code is consumed, so a bad request does not burn it.
    // Stored under its hash: a leaked store holds no code to redeem.
    const key = hashedRecordId(code);
    const stored = await ctx.store.get<CodeRecord>('code', key);
    // Another client's code is answered exactly like an unknown one.
    if (!stored || stored.value.clientId !== client.clientId) throw new OAuthError('invalid_grant', 'unknown code');
    const record = stored.value;
    if (record.expiresAt <= ctx.now()) throw new OAuthError('invalid_grant', 'the code has expired');
    if (redirectUri !== record.redirectUri)
      throw new OAuthError('invalid_grant', 'redirect_uri differs from the authorization request');
    verifyPkce(record, verifier);
    // Asked for now: read beside the subscriber's limit, or (limits off) beside the consume that issues the tokens.
    const revoked = askRevoked(ctx.notBefore, record);
    const presented = { kind: 'code', id: key, secret: code } as const;
    // A retry of a redemption whose answer was lost (a late store reply: 503), or a concurrent duplicate, by the
    // same client (and DPoP key) within lifetimes.redemptionRetry gets the same tokens; anything else is a replay.
    const again = () => redeemedBefore(ctx, presented, client.clientId, options.dpopJkt);
    if (stored.consumed) {
      if (await revoked) throw revokedError('code');
      const tokens = await again();
      if (!tokens) throw await replayed(ctx, record);
      return withIdToken(ctx, record, tokens);
    }
    // Before anything is issued: the code stays redeemable (until it expires) for a retry after Retry-After. A
    // revoked code is refused as such, whatever the limit says.
    await limitSubscriber(ctx, 'token', record.clientId, record.subscriberId).catch(async (error: unknown) => {
      if (await revoked) throw revokedError('code');
      throw error;
    });

    // Consuming the code and storing the token are one atomic step: a replay that finds the code consumed and
    // revokes its grant always finds the token too, and a failure (503) leaves neither. Of concurrent
    // redemptions exactly one wins; the others are replays.
    const exchanged = redemptionOf(presented);
    const refresh = offeredRefreshToken(
      ctx,
      client,
      record,
      record.grantId,
      record.consentGrants,
      options.dpopJkt,
      exchanged,
    );
    const tokens = await issueAccessToken(ctx, record, record.grantId, record.consentGrants, exchanged, {
      ...options,
      refresh,
      revoked,
    });
    if (!tokens) {
      const same = await again();
      if (!same) throw await replayed(ctx, record);
      return withIdToken(ctx, record, same);
    }
    withIdToken(ctx, record, tokens);
    const subject = {
      clientId: record.clientId,
      subscriberId: record.subscriberId,
      purpose: record.purpose,
      scopes: record.scopes,
    };
    ctx.events.emit('code.consumed', subject);
    reportIssued(ctx, record, 'authorization_code', tokens);
    return tokens;
  },
};

/** Adds the ID token when `openid` was granted (and ID tokens are on). */
function withIdToken(ctx: GrantCollaborators, record: CodeRecord, tokens: TokenResponse): TokenResponse {
  if (idTokenRequested(ctx, record.scope)) {
    tokens.id_token = issueIdToken(ctx, {
      clientId: record.clientId,
      subscriber: { id: record.subscriberId },
      identifiedBy: record.identifiedBy,
      // The subscriber was identified when the code was issued.
      authTime: record.issuedAt,
      ...(record.nonce === null ? {} : { nonce: record.nonce }),
      accessToken: tokens.access_token,
    });
  }
  return tokens;
}
