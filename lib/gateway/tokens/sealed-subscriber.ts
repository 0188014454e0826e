import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';

/**
 * The operator's subscriber id inside a JWT access token, readable by the gateway only (RFC 9068 §6: the token's
 * `sub` is pairwise, so clients cannot correlate a subscriber by it, yet the guard needs the internal id with no
 * store read). AES-256-GCM under a key derived (HKDF-SHA256) from the signing key's private half, so every
 * instance that shares the signing keys opens it, and no new secret needs configuring. A fresh nonce per token,
 * and the token's `jti` as additional data: equal ids never look equal, and a sealed id cannot move to another token.
 */

const INFO = 'express-netauth access-token subscriber v1';
const keys = new WeakMap<KeyObject, Buffer>();

function keyOf(privateKey: KeyObject): Buffer {
  let key = keys.get(privateKey);
  if (key === undefined) {
    const material = privateKey.export({ format: 'der', type: 'pkcs8' });
    key = Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), INFO, 32));
    keys.set(privateKey, key);
  }
  return key;
}

/** base64url(nonce ‖ ciphertext ‖ tag). */
export function sealSubscriber(privateKey: KeyObject, jti: string, subscriberId: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(privateKey), nonce).setAAD(Buffer.from(jti, 'utf8'));
  const sealed = Buffer.concat([nonce, cipher.update(subscriberId, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return sealed.toString('base64url');
}

/** The subscriber id, or undefined when the value was not sealed with this key for this `jti`. */
export function openSubscriber(privateKey: KeyObject, jti: string, sealed: unknown): string | undefined {
  if (typeof sealed !== 'string') return undefined;
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length < 12 + 16 + 1) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(privateKey), bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(jti, 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
