import * as crypto from 'node:crypto';
import { placementTag } from './stores/store.js';

/**
 * The package's two hot cryptographic primitives, kept cheap: random identifiers drawn from a pooled buffer
 * (one `randomFillSync` per 4 KiB instead of one per identifier) and one-shot SHA-256 (`crypto.hash` where
 * the runtime has it, Node >= 20.12; a Hash object otherwise). Every byte of the pool is used once.
 */
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

/**
 * `bytes` fresh bytes of the pool, as `read` takes them from it (refilled when too few are left); then they are
 * overwritten, so a later bug can never hand the same bytes out twice.
 */
function fromPool<T>(bytes: number, read: (start: number, end: number) => T): T {
  if (offset + bytes > POOL_SIZE) {
    crypto.randomFillSync(pool);
    offset = 0;
  }
  const value = read(offset, offset + bytes);
  pool.fill(0, offset, offset + bytes);
  offset += bytes;
  return value;
}

const asBase64url = (start: number, end: number): string => pool.toString('base64url', start, end);
const asCopy = (start: number, end: number): Buffer => Buffer.from(pool.subarray(start, end));

/** `bytes` random bytes (CSPRNG) as base64url: 32 bytes = 256 bits for tokens, 16 = 128 bits for ids. */
export function randomId(bytes: number): string {
  return bytes > POOL_SIZE ? crypto.randomBytes(bytes).toString('base64url') : fromPool(bytes, asBase64url);
}

/** `bytes` random bytes (CSPRNG) from the same pool, as a Buffer of their own (a nonce). */
export function randomBytesOf(bytes: number): Buffer {
  return bytes > POOL_SIZE ? crypto.randomBytes(bytes) : fromPool(bytes, asCopy);
}

/**
 * A fresh placement tag (lib/stores/store.ts): 48 random bits, 8 characters. Only where records land depends on
 * it; the secret part of an id is the random text after it.
 */
export function randomTag(): string {
  return randomId(6);
}

/** `<tag>.<bytes random bytes>`: an id placed with every other id carrying `tag`. */
export function taggedId(tag: string, bytes: number): string {
  return `${tag}.${randomId(bytes)}`;
}

type OneShotHash = (algorithm: string, data: string, outputEncoding: 'base64url') => string;
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;

/** Base64url SHA-256 of bytes, the encoding of `ath`, `camara:qh` and `camara:bh`. */
export function sha256Of(bytes: Uint8Array): string {
  return crypto.createHash('sha256').update(bytes).digest('base64url');
}

/** SHA-256 of a UTF-8 string, base64url. */
export function sha256(text: string): string {
  return oneShot
    ? oneShot('sha256', text, 'base64url')
    : crypto.createHash('sha256').update(text, 'utf8').digest('base64url');
}

/**
 * The store id of a secret identifier the gateway hands out (a code, an auth_req_id): its SHA-256 after its
 * placement tag, so a leaked store (or a Redis KEYS listing) reveals no usable value while the record still lands
 * with its grant's.
 */
export function hashedRecordId(id: string): string {
  const tag = placementTag(id);
  const hash = sha256(id);
  return tag === undefined ? hash : `${tag}.${hash}`;
}

/** SHA-256 of a UTF-8 string, as bytes (for constant-time comparison of fixed-length digests). */
export function sha256Bytes(text: string): Buffer {
  return oneShot
    ? (oneShot as unknown as (a: string, d: string, e: 'buffer') => Buffer)('sha256', text, 'buffer')
    : crypto.createHash('sha256').update(text, 'utf8').digest();
}
