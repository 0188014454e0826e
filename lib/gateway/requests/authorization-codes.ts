import { hashedRecordId, randomTag, taggedId } from '../../crypto.js';
import type { EventHub } from '../../ops/events.js';
import type { Store } from '../../stores/store.js';
import type { Lifetimes } from '../options.js';
import { authorizationOf, type StoredAuthorization } from './authorization.js';

/** An authorization code as stored under its hash (kind `code`, `hashedRecordId`). */
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

/** BASE64URL(SHA256(verifier)): always 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Issues a single-use code: 256 random bits, base64url, after a placement tag it shares with its grant (so a
 * sharded store keeps the code and the tokens issued from it together).
 */
/** What issuing a code uses: the store it is kept in, the clock, its lifetime, and the events it reports to. */
export interface CodeIssuing {
  store: Store;
  now: () => number;
  lifetimes: Required<Lifetimes>;
  events: EventHub;
}

export async function createAuthorizationCode(ctx: CodeIssuing, request: CodeRequest): Promise<string> {
  const tag = randomTag();
  const code = taggedId(tag, 32);
  const issuedAt = ctx.now();
  const record: CodeRecord = {
    ...authorizationOf(request),
    redirectUri: request.redirectUri,
    codeChallenge: request.codeChallenge,
    nonce: request.nonce,
    grantId: taggedId(tag, 16),
    consentGrants: request.consentGrants,
    issuedAt,
    expiresAt: issuedAt + ctx.lifetimes.code * 1000,
  };
  // Written with the consent grants too: withdrawing consent before redemption kills the code as well.
  await ctx.store.put('code', hashedRecordId(code), record, {
    ttl: ctx.lifetimes.code,
    grants: [record.grantId, ...record.consentGrants],
  });
  ctx.events.emit('code.issued', {
    clientId: record.clientId,
    subscriberId: record.subscriberId,
    purpose: record.purpose,
    scopes: record.scopes,
    identifiedBy: record.identifiedBy,
    pkce: record.codeChallenge !== null,
  });
  return code;
}
