import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../lib/stores/memory.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('memory', async () => {
  let now = 1_700_000_000_000;
  const store = new MemoryStore({ now: () => now, sweepInterval: 0 });
  return {
    store,
    elapse: async (seconds) => {
      now += seconds * 1000;
    },
    close: () => store.close(),
  };
});

describe('memory store reclamation', () => {
  it('reclaims expired entries and their grant index without being asked for them', async () => {
    let now = 0;
    const store = new MemoryStore({ now: () => now, sweepInterval: 0 });
    for (let i = 0; i < 10_000; i++) {
      await store.put('backchannel', `id${i}`, { i }, { ttl: 10, grants: [`g${i}`] });
    }
    expect(store.size).toBe(10_000);
    now += 11_000;
    await store.put('code', 'fresh', { v: 1 }, { ttl: 10 });
    expect(store.size).toBe(1);
    // The grant index went with the entries: revoking an old grant touches nothing live.
    await store.revokeGrant('g5');
    expect(await store.get('code', 'fresh')).toBeDefined();
  });

  it('frozen values: a reader cannot change what is stored', async () => {
    const store = new MemoryStore({ sweepInterval: 0 });
    await store.put('code', 'f', { list: [1] }, { ttl: 60 });
    const read = await store.get<{ list: number[] }>('code', 'f');
    expect(() => read!.value.list.push(2)).toThrow(TypeError);
    expect((await store.get('code', 'f'))?.value).toEqual({ list: [1] });
  });
});
