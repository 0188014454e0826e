import type { Store } from '../../lib/index.js';

/**
 * A store that passes every call through to `inner`, but for the methods given in `overrides`: for tests that
 * make one operation fail, or watch it. Every argument goes through (a consume's writes included).
 */
export function wrapStore(inner: Store, overrides: Partial<Store> = {}): Store {
  return {
    put: (kind, id, value, options) => inner.put(kind, id, value, options),
    get: (kind, id) => inner.get(kind, id),
    add: (kind, id, value, options) => inner.add(kind, id, value, options),
    consume: (kind, id, writes) => inner.consume(kind, id, writes),
    delete: (kind, id) => inner.delete(kind, id),
    revokeGrant: (grant) => inner.revokeGrant(grant),
    ...overrides,
  };
}
