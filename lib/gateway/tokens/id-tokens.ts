import { createHash } from 'node:crypto';
import type { JWTPayload } from 'jose';
import type { Subscriber } from '../../identity/subscribers.js';
import { amrOf, type SubscriberIdentification } from '../../identity/identification.js';
import type { Lifetimes } from '../options.js';
import { signJws } from './jws.js';
import { hashAlgorithmOf, type KeySet } from './keys.js';
import type { PairwiseSubject } from '../../identity/pairwise-subject.js';

/** What issuing an ID token uses: whether they are on, the signing keys, the issuer, the clock, the lifetimes, `sub`. */
export interface IdTokenIssuing {
  idTokens: boolean;
  keys: KeySet | undefined;
  issuer: string;
  now: () => number;
  lifetimes: Required<Lifetimes>;
  pairwiseSubject: PairwiseSubject;
}

export interface IdTokenInput {
  clientId: string;
  /** Only the id is used: `sub` is derived from it, pairwise per client. The phone number never appears. */
  subscriber: Pick<Subscriber, 'id'>;
  /**
   * How the subscriber was identified (the grant's record): `amr` says it (identity/identification.ts). A record
   * of an earlier version has none; its ID token then has no `amr`.
   */
  identifiedBy: SubscriberIdentification | undefined;
  /** Epoch ms of the authentication (`auth_time`). */
  authTime: number;
  /** The authorization request's nonce; the claim is present only when one was sent. */
  nonce?: string;
  /** The access token issued alongside: adds `at_hash` (OIDC Core §3.1.3.6), binding the two. */
  accessToken?: string;
  /** Further claims (e.g. CIBA's `urn:openid:params:jwt:claim:auth_req_id`). They cannot replace the ones above. */
  extra?: Record<string, unknown>;
}

/** Whether a token response for this granted scope carries an ID token: `openid` requested and ID tokens on. */
export function idTokenRequested(ctx: Pick<IdTokenIssuing, 'idTokens' | 'keys'>, scope: string): boolean {
  return ctx.idTokens && ctx.keys !== undefined && scope.split(' ').includes('openid');
}

/** The `*_hash` of a token value: left half of its hash with the signing algorithm's hash function, base64url. */
export function tokenHash(value: string, alg: string): string {
  const digest = createHash(hashAlgorithmOf(alg)).update(value, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/**
 * Signs an ID token with the active key: iss, sub (pairwise), aud (the client), exp, iat, auth_time, amr (how the
 * subscriber was identified), nonce when sent, at_hash when the access token is given. Lifetime: the access token's.
 * Both grants call this: CIBA without a nonce, the authorization code grant with the request's nonce.
 */
export function issueIdToken(ctx: IdTokenIssuing, input: IdTokenInput): string {
  const key = ctx.keys?.active;
  if (!key) throw new Error('ID tokens need a signing key');
  const iat = Math.floor(ctx.now() / 1000);
  const claims: JWTPayload = {
    ...input.extra,
    iss: ctx.issuer,
    sub: ctx.pairwiseSubject(input.clientId, input.subscriber.id),
    aud: input.clientId,
    exp: iat + ctx.lifetimes.accessToken,
    iat,
    auth_time: Math.floor(input.authTime / 1000),
  };
  if (input.identifiedBy !== undefined) claims.amr = amrOf(input.identifiedBy);
  else delete claims.amr;
  if (input.nonce !== undefined) claims.nonce = input.nonce;
  else delete claims.nonce;
  if (input.accessToken !== undefined) claims.at_hash = tokenHash(input.accessToken, key.alg);
  else delete claims.at_hash;
  return signJws(key, 'JWT', claims);
}
