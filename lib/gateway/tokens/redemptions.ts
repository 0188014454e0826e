import { createCipheriv, createDecipheriv } from 'node:crypto';
import { randomBytesOf, randomId, sha256, sha256Bytes } from '../../crypto.js';
import type { RecordWrite, Store } from '../../stores/store.js';
import type { Lifetimes } from '../options.js';

/**
 * Idempotent redemption. A code, an approved auth_req_id or a refresh token is consumed in one atomic store step with its tokens
 * written; when the store's reply to that step is late (a slow or paused master) the client gets 503 although the
 * step ran, and its retry would find the id used. So the step also leaves a short-lived redemption record, which
 * answers a retry of the same client (and the same DPoP key) with the same tokens for `lifetimes.redemptionRetry`
 * seconds. Never a second token for one answer, never to another client.
 *
 * The record never holds a usable token. Opaque tokens issued for a redemption are derived from the presented value,
 * which the store never holds (only its hash), and a random salt the record keeps: a retry presents the value again
 * and derives them again. JWT access tokens cannot be derived so; they are sealed (AES-256-GCM) under a key derived
 * from the presented value, with the client id as additional data, so a record cannot be opened for another client.
 * Both derivations are NIST SP 800-56C's one-step KDF, SHA-256(counter 1, the value, INFO, ...): the value is 256
 * random bits already, so HKDF's extract step adds nothing (issue 46: a one-shot hash costs a fifth of HKDF, and
 * deriving instead of sealing saves a cipher object per consume). The record is written under the grant, so revoking
 * it (a replay outside the window) deletes it; a token revoked otherwise (consent withdrawn) is not handed out again.
 */

// v2: the one-step derivation; a v1 record (HKDF) just fails to open, and is not redelivered.
const INFO = 'express-netauth redemption v2';

/** What a redemption record keeps: who may have the answer, and how to give it again. */
interface RedemptionRecord {
  clientId: string;
  /** RFC 9449 thumbprint the tokens are bound to; null when unbound. A retry must present the same key. */
  jkt: string | null;
  /** The answer sealed (JWT access tokens); null when its tokens are derived. */
  sealed: string | null;
  /** For derived tokens: the salt, the granted scope and the tokens' placement tags (refresh: null when none). */
  salt: string | null;
  scope: string | null;
  accessTag: string | null;
  refreshTag: string | null;
  /** Epoch ms after which the record no longer answers, by the gateway's clock (the store's TTL counts by its own). */
  until: number;
  [key: string]: string | number | null;
}

/** A token endpoint answer (lib/gateway/tokens/access-tokens.ts' TokenResponse, which builds on this module). */
interface TokenAnswer {
  access_token: string;
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

/** The parts of the answer that are sealed: `expires_in` is counted again when redelivered. */
export type SealedAnswer = Omit<TokenAnswer, 'expires_in'>;

function keyOf(secret: string): Buffer {
  return sha256Bytes(`\0\0\0\x01${secret}${INFO}`);
}

function seal(secret: string, clientId: string, answer: SealedAnswer): string {
  const nonce = randomBytesOf(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secret), nonce).setAAD(Buffer.from(clientId, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(answer), 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
}

function open(secret: string, clientId: string, sealed: string): SealedAnswer | undefined {
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length < 12 + 16 + 1) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(secret), bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(clientId, 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    const text = Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]);
    return JSON.parse(text.toString('utf8')) as SealedAnswer;
  } catch {
    return undefined;
  }
}

/** The code, auth_req_id or refresh token presented for redemption: its store record, and the value itself. */
export interface Presentation {
  kind: 'code' | 'backchannel' | 'refresh_token';
  /** The record's id (the presented value's hash, after its placement tag). */
  id: string;
  /** The presented code, auth_req_id or refresh token: the tokens (or their seal's key) are derived from it. */
  secret: string;
}

/** An attempt to redeem a presentation, about to issue tokens. */
export interface Redeemed extends Presentation {
  /** This attempt's salt (256 random bits): a retry takes the salt of the attempt that won, from its record. */
  salt: string;
}

/**
 * `presented`, with a fresh salt: made where tokens are about to be issued, not for a poll still pending or a retry
 * (which derives with the salt its record keeps).
 */
export function redemptionOf(presented: Presentation): Redeemed {
  return { ...presented, salt: randomId(32) };
}

/** The opaque `use` token of a redemption of `secret` under `salt`, after `tag`: 256 bits, like a random one. */
function derived(secret: string, salt: string, use: 'access' | 'refresh', tag: string): string {
  return `${tag}.${sha256(`\0\0\0\x01${secret}${INFO}\0${use}\0${salt}`)}`;
}

/** The opaque `use` token this redemption issues, after its placement `tag` (redeemAgain derives it again). */
export function redeemedToken(redemption: Redeemed, use: 'access' | 'refresh', tag: string): string {
  return derived(redemption.secret, redemption.salt, use, tag);
}

const tagOf = (token: string) => token.slice(0, token.indexOf('.'));

/** What redemption records use: the store, the clock and the retry window (`lifetimes.redemptionRetry`). */
export interface RedemptionKeeping {
  store: Store;
  now: () => number;
  lifetimes: Required<Lifetimes>;
}

/**
 * The redemption record to write in the consume step, under the redeemed record's id (so on its shard). `derived`:
 * every token of the answer is `redeemedToken(redeemed, ...)` (opaque ones); otherwise the answer is sealed.
 */
export function redemptionWrite(
  ctx: Pick<RedemptionKeeping, 'now' | 'lifetimes'>,
  redeemed: Redeemed,
  clientId: string,
  jkt: string | null,
  tokens: TokenAnswer,
  grants: readonly string[],
  derived: boolean,
): RecordWrite {
  const { access_token, token_type, scope, refresh_token } = tokens;
  const window = ctx.lifetimes.redemptionRetry;
  const until = ctx.now() + window * 1000;
  let value: RedemptionRecord;
  const refreshTag = refresh_token === undefined ? null : tagOf(refresh_token);
  // Derived tokens are derived again on a retry; a JWT access token is sealed, with its refresh token.
  if (derived) {
    const accessTag = tagOf(access_token);
    value = { clientId, jkt, sealed: null, salt: redeemed.salt, scope, accessTag, refreshTag, until };
  } else {
    const answer: SealedAnswer = { access_token, token_type, scope, ...(refresh_token ? { refresh_token } : {}) };
    const sealed = seal(redeemed.secret, clientId, answer);
    value = { clientId, jkt, sealed, salt: null, scope: null, accessTag: null, refreshTag: null, until };
  }
  return { kind: 'redemption', id: redeemed.id, value, options: { ttl: window, grants } };
}

/**
 * The tokens a redemption of `redeemed` stored, for a retry by the client that redeemed it with the same DPoP key
 * (`jkt`), while the record lives and `live` finds the tokens unused (a client that used them had its answer: this
 * is a replay, as before); else undefined.
 * `expires_in` counts from now. The caller adds the ID token, which binds nothing to the store.
 */
export async function redeemAgain(
  ctx: Pick<RedemptionKeeping, 'store' | 'now'>,
  redeemed: Presentation,
  clientId: string,
  jkt: string | null,
  live: (tokens: SealedAnswer) => Promise<{ expiresAt: number } | undefined>,
): Promise<TokenAnswer | undefined> {
  const stored = await ctx.store.get<RedemptionRecord>('redemption', redeemed.id);
  const record = stored?.value;
  if (!record || record.clientId !== clientId || record.jkt !== jkt || record.until <= ctx.now()) return undefined;
  // A record with `sealed` null holds derived tokens; one written before them (v2) has no such fields.
  const answer =
    typeof record.sealed === 'string'
      ? open(redeemed.secret, clientId, record.sealed)
      : derivedAnswer(redeemed.secret, record);
  if (!answer) return undefined;
  const token = await live(answer);
  if (!token) return undefined;
  const expiresIn = Math.ceil((token.expiresAt - ctx.now()) / 1000);
  if (expiresIn < 1) return undefined;
  return { ...answer, expires_in: expiresIn };
}

/** The derived tokens of `record`, derived again from the presented `secret`. */
function derivedAnswer(secret: string, record: RedemptionRecord): SealedAnswer | undefined {
  const { salt, scope, accessTag, refreshTag } = record;
  if (typeof salt !== 'string' || typeof scope !== 'string' || typeof accessTag !== 'string') return undefined;
  return {
    access_token: derived(secret, salt, 'access', accessTag),
    token_type: record.jkt === null ? 'Bearer' : 'DPoP',
    scope,
    ...(typeof refreshTag === 'string' ? { refresh_token: derived(secret, salt, 'refresh', refreshTag) } : {}),
  };
}
