import { createCipheriv, createDecipheriv } from 'node:crypto';
import { randomBytesOf, sha256Bytes } from '../../crypto.js';
import type { RecordWrite, Store } from '../../stores/store.js';
import type { Lifetimes } from '../options.js';

/**
 * Idempotent redemption. A code, an approved auth_req_id or a refresh token is consumed in one atomic store step with its tokens
 * written; when the store's reply to that step is late (a slow or paused master) the client gets 503 although the
 * step ran, and its retry would find the id used. So the step also leaves a short-lived redemption record: the
 * tokens it issued, sealed, which answers a retry of the same client (and the same DPoP key) with the same tokens
 * for `lifetimes.redemptionRetry` seconds. Never a second token for one answer, never to another client.
 *
 * The tokens are sealed (AES-256-GCM) under a key derived from the presented value itself, which the store never
 * holds (only its hash): a leaked store reveals no usable token. The key is NIST SP 800-56C's one-step derivation,
 * SHA-256(counter 1, the value, INFO): the value is 256 random bits already, so HKDF's extract step adds nothing,
 * and a one-shot hash costs a fifth of HKDF per consume (issue 46). The client id is the additional
 * data, so a record cannot be opened for another client. The record is written under the grant, so revoking it
 * (a replay outside the window) deletes it; a token revoked otherwise (consent withdrawn) is not handed out again.
 */

// v2: the one-step derivation; a v1 record (HKDF) just fails to open, and is not redelivered.
const INFO = 'express-netauth redemption v2';

/** What a redemption record keeps: who may have the answer, and the answer sealed. */
interface RedemptionRecord {
  clientId: string;
  /** RFC 9449 thumbprint the tokens are bound to; null when unbound. A retry must present the same key. */
  jkt: string | null;
  sealed: string;
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

/** The code or auth_req_id being redeemed: its store record, and the value the client presented. */
export interface Redeemed {
  kind: 'code' | 'backchannel' | 'refresh_token';
  /** The record's id (the presented value's hash, after its placement tag). */
  id: string;
  /** The presented code, auth_req_id or refresh token: the sealing key is derived from it. */
  secret: string;
}

/** What redemption records use: the store, the clock and the retry window (`lifetimes.redemptionRetry`). */
export interface RedemptionKeeping {
  store: Store;
  now: () => number;
  lifetimes: Required<Lifetimes>;
}

/** The redemption record to write in the consume step, under the redeemed record's id (so on its shard). */
export function redemptionWrite(
  ctx: Pick<RedemptionKeeping, 'now' | 'lifetimes'>,
  redeemed: Redeemed,
  clientId: string,
  jkt: string | null,
  tokens: TokenAnswer,
  grants: readonly string[],
): RecordWrite {
  const { access_token, token_type, scope, refresh_token } = tokens;
  const answer: SealedAnswer = { access_token, token_type, scope, ...(refresh_token ? { refresh_token } : {}) };
  const window = ctx.lifetimes.redemptionRetry;
  const sealed = seal(redeemed.secret, clientId, answer);
  const value: RedemptionRecord = { clientId, jkt, sealed, until: ctx.now() + window * 1000 };
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
  redeemed: Redeemed,
  clientId: string,
  jkt: string | null,
  live: (tokens: SealedAnswer) => Promise<{ expiresAt: number } | undefined>,
): Promise<TokenAnswer | undefined> {
  const stored = await ctx.store.get<RedemptionRecord>('redemption', redeemed.id);
  const record = stored?.value;
  if (!record || record.clientId !== clientId || record.jkt !== jkt || record.until <= ctx.now()) return undefined;
  const answer = open(redeemed.secret, clientId, record.sealed);
  if (!answer) return undefined;
  const token = await live(answer);
  if (!token) return undefined;
  const expiresIn = Math.ceil((token.expiresAt - ctx.now()) / 1000);
  if (expiresIn < 1) return undefined;
  return { ...answer, expires_in: expiresIn };
}
