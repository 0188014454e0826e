import { generateKeyPairSync } from 'node:crypto';
import type { JWK } from 'jose';
import type { JsonObject, PutOptions, RecordKind, RecordWrite, Store, StoredRecord } from '../../lib/index.js';

/** A private RSA JWK, as an operator would configure one. */
export function rsaKey(kid?: string): JWK {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' }) as JWK;
  return kid === undefined ? jwk : { ...jwk, kid };
}

export function ecKey(kid?: string): JWK {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' }) as JWK;
  return kid === undefined ? jwk : { ...jwk, kid };
}

/** Generated once per test file: RSA key generation is the slow part. */
export const KEY_A = rsaKey('key-a');
export const KEY_B = rsaKey('key-b');
export const FOREIGN_KEY = rsaKey('key-a');

/**
 * A real store behind a wrapper that counts every read and refuses reads of access-token records:
 * proves the guard verifies JWT access tokens without a store lookup of the token.
 */
export class NoTokenReadStore implements Store {
  readonly reads: Array<[RecordKind, string]> = [];
  refuseTokenReads = true;

  constructor(private readonly inner: Store) {}

  put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    return this.inner.put(kind, id, value, options);
  }

  get<T extends JsonObject = JsonObject>(kind: RecordKind, id: string): Promise<StoredRecord<T> | undefined> {
    this.reads.push([kind, id]);
    if (kind === 'access_token' && this.refuseTokenReads)
      return Promise.reject(new Error('access_token records must not be read'));
    return this.inner.get<T>(kind, id);
  }

  add(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<boolean> {
    return this.inner.add(kind, id, value, options);
  }

  consume(kind: RecordKind, id: string, writes?: readonly RecordWrite[]): Promise<boolean> {
    return this.inner.consume(kind, id, writes);
  }

  delete(kind: RecordKind, id: string): Promise<void> {
    return this.inner.delete(kind, id);
  }

  revokeGrant(grantId: string): Promise<void> {
    return this.inner.revokeGrant(grantId);
  }

  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }
}
