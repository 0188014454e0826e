import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../lib/index.js';
import { NotBeforeMarkers } from '../../lib/gateway/levers/not-before.js';
import { wrapStore } from '../helpers/store-wrapper.js';

const NOW = 1_800_000_000_000;

/** A memory store whose marker reads are counted, on a clock the test moves. */
function setUp(limit?: number) {
  const clock = { now: NOW };
  const inner = new MemoryStore({ now: () => clock.now });
  const reads: string[] = [];
  const store = wrapStore(inner, {
    get: (kind, id) => {
      if (kind === 'not_before') reads.push(id);
      return inner.get(kind, id);
    },
  });
  const markers = new NotBeforeMarkers(store, () => clock.now, 3600, 5, limit);
  return { clock, inner, store, reads, markers };
}

const of = (subscriberId: string | null, authorizedAt: number) => ({ clientId: 'app-1', subscriberId, authorizedAt });

describe('not-before markers (the levers in the store)', () => {
  it('refuse what began before the revocation, of the subscriber or the client, and nothing that began after', async () => {
    const { clock, markers, inner } = setUp();
    await markers.mark('subscriber', 'sub-1');
    expect(await markers.refuses(of('sub-1', NOW - 1))).toBe(true);
    expect(await markers.refuses(of('sub-1', NOW))).toBe(false);
    expect(await markers.refuses(of('sub-2', NOW - 1))).toBe(false);
    clock.now += 10;
    await markers.mark('client', 'app-1');
    // A two-legged token has only its client's marker.
    expect(await markers.refuses(of(null, NOW + 9))).toBe(true);
    expect(await markers.refuses(of('sub-2', NOW + 10))).toBe(false);
    expect((await inner.get('not_before', 'client:app-1'))?.value).toEqual({ notBefore: NOW + 10 });
  });

  it('answer from memory for 5 s after a read, then read again: how long another instance may lag', async () => {
    const { clock, store, reads, markers } = setUp();
    const elsewhere = new NotBeforeMarkers(store, () => clock.now, 3600);
    expect(markers.refusesFromMemory(of('sub-1', NOW - 1))).toBeUndefined();
    expect(await markers.refusesRecently(of('sub-1', NOW - 1))).toBe(false);
    expect(reads).toEqual(['subscriber:sub-1', 'client:app-1']);
    await elsewhere.mark('subscriber', 'sub-1');
    clock.now += 4_999;
    expect(markers.refusesFromMemory(of('sub-1', NOW - 1))).toBe(false);
    clock.now += 1;
    expect(markers.refusesFromMemory(of('sub-1', NOW - 1))).toBeUndefined();
    expect(await markers.refusesRecently(of('sub-1', NOW - 1))).toBe(true);
    expect(markers.refusesFromMemory(of('sub-1', NOW - 1))).toBe(true);
  });

  it('keep at most `limit` markers in memory, the least recently read going first', async () => {
    const { markers } = setUp(3);
    // Each subscriber's marker and the one client's: sub-1, app-1, sub-2, then sub-3 evicts sub-1.
    for (const id of ['sub-1', 'sub-2', 'sub-3']) await markers.refuses(of(id, NOW));
    expect(markers.refusesFromMemory(of('sub-1', NOW))).toBeUndefined();
    expect(markers.refusesFromMemory(of('sub-3', NOW))).toBe(false);
  });

  it('never move back in this process: a later revocation here outlives an earlier one read from the store', async () => {
    const { clock, inner, markers } = setUp();
    clock.now += 100;
    await markers.mark('subscriber', 'sub-1');
    // Another instance's earlier revocation landing last in the store.
    await inner.put('not_before', 'subscriber:sub-1', { notBefore: NOW }, { ttl: 3600 });
    expect(await markers.refuses(of('sub-1', NOW + 50))).toBe(true);
  });
});
