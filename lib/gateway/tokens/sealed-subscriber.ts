import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';

/**
 * The operator's subscriber id inside a JWT access token, readable by the gateway only (RFC 9068 §6: the token's
 * `sub` is pairwise, so clients cannot correlate a subscriber by it, yet the guard needs the internal id with no
 * store read). AES-256-GCM under a key derived (HKDF-SHA256) from the signing key's private half, so every
 * instance that shares the signing keys opens it, and no new secret needs configuring. A fresh nonce per token,
 * and the token's `jti` as additional data: equal ids never look equal, and a sealed id cannot move to another token.
 *
 * The id is padded before it is sealed (ISO/IEC 7816-4: a 0x80 byte, then zeros, to a whole number of
 * `PADDING_BLOCK` bytes), so a seal's length does not tell the id's: every id of up to 63 bytes seals to the same
 * length (123 characters), a longer one to the next 64-byte step.
 */

/** Padded seals (issue 42, finding 10). */
const INFO = 'express-netauth access-token subscriber v2';
/** The unpadded seals before it, opened while tokens issued by an older instance of a fleet are live. */
const LEGACY_INFO = 'express-netauth access-token subscriber v1';
const PADDING_BLOCK = 64;
const keys = new WeakMap<KeyObject, { key: Buffer; legacy: Buffer }>();

function keysOf(privateKey: KeyObject): { key: Buffer; legacy: Buffer } {
  let derived = keys.get(privateKey);
  if (derived === undefined) {
    const material = privateKey.export({ format: 'der', type: 'pkcs8' });
    const derive = (info: string) => Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), info, 32));
    derived = { key: derive(INFO), legacy: derive(LEGACY_INFO) };
    keys.set(privateKey, derived);
  }
  return derived;
}

/** The id's UTF-8 bytes, 0x80, then zeros up to a multiple of PADDING_BLOCK. */
function pad(subscriberId: string): Buffer {
  const id = Buffer.from(subscriberId, 'utf8');
  const padded = Buffer.alloc((Math.floor(id.length / PADDING_BLOCK) + 1) * PADDING_BLOCK);
  id.copy(padded);
  padded[id.length] = 0x80;
  return padded;
}

/** The id before its padding, or undefined when the padding is not there. */
function unpad(padded: Buffer): string | undefined {
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  return end >= 0 && padded[end] === 0x80 ? padded.toString('utf8', 0, end) : undefined;
}

/** base64url(nonce ‖ ciphertext ‖ tag). */
export function sealSubscriber(privateKey: KeyObject, jti: string, subscriberId: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keysOf(privateKey).key, nonce).setAAD(Buffer.from(jti, 'utf8'));
  const sealed = Buffer.concat([nonce, cipher.update(pad(subscriberId)), cipher.final(), cipher.getAuthTag()]);
  return sealed.toString('base64url');
}

function open(key: Buffer, jti: string, bytes: Buffer): Buffer | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(jti, 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]);
  } catch {
    return undefined;
  }
}

/** The subscriber id, or undefined when the value was not sealed with this key for this `jti`. */
export function openSubscriber(privateKey: KeyObject, jti: string, sealed: unknown): string | undefined {
  if (typeof sealed !== 'string') return undefined;
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length < 12 + 16 + 1) return undefined;
  const { key, legacy } = keysOf(privateKey);
  const padded = open(key, jti, bytes);
  if (padded !== undefined) return unpad(padded);
  return open(legacy, jti, bytes)?.toString('utf8');
}
