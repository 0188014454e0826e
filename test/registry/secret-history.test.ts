import { describe, expect, it } from 'vitest';
import { SecretHistory } from '../../lib/registry/secret-history.js';

/**
 * The memory behind the scrypt queue's order (issue 42, finding 2): what it finds, for how long, how much it holds.
 * The clock is injected; the HTTP behaviour is test/gateway/client-auth/scrypt-flood.test.ts's.
 */

const HASH = 'scrypt:c2FsdHNhbHRzYWx0c2FsdA:aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';

function history(ttlMs = 1_000, max = 3) {
  const clock = { now: 0 };
  return { clock, history: new SecretHistory(() => clock.now, ttlMs, max) };
}

describe('SecretHistory', () => {
  it('finds a verified secret for the same client and registered hash only, until it expires', () => {
    const { clock, history: h } = history();
    h.rememberVerified('human', HASH, 'right');
    expect(h.verifiedRecently('human', HASH, 'right')).toBe(true);
    expect(h.verifiedRecently('human', HASH, 'wrong')).toBe(false);
    expect(h.verifiedRecently('other', HASH, 'right')).toBe(false);
    // A rotated registration (another hash) finds nothing.
    expect(h.verifiedRecently('human', `${HASH}x`, 'right')).toBe(false);
    // No ambiguity where the fields meet.
    expect(h.verifiedRecently('huma', `n${HASH}`, 'right')).toBe(false);
    clock.now = 999;
    expect(h.verifiedRecently('human', HASH, 'right')).toBe(true);
    clock.now = 1_000;
    expect(h.verifiedRecently('human', HASH, 'right')).toBe(false);
  });

  it('ranks by recent failures: +1 for the client id, +2 for the address; they expire', () => {
    const { clock, history: h } = history();
    expect(h.rank('human', '192.0.2.1')).toBe(0);
    h.rememberFailure('human', '198.51.100.1');
    expect(h.rank('human', '192.0.2.1')).toBe(1);
    expect(h.rank('other', '198.51.100.1')).toBe(2);
    expect(h.rank('human', '198.51.100.1')).toBe(3);
    clock.now = 1_000;
    expect(h.rank('human', '198.51.100.1')).toBe(0);
  });

  it('holds at most its bound per kind: the oldest goes first', () => {
    const { history: h } = history(1_000, 3);
    for (const secret of ['a', 'b', 'c', 'd']) h.rememberVerified('human', HASH, secret);
    expect(['a', 'b', 'c', 'd'].map((s) => h.verifiedRecently('human', HASH, s))).toEqual([false, true, true, true]);
    for (const address of ['1', '2', '3', '4']) h.rememberFailure('human', address);
    expect(['1', '2', '3', '4'].map((a) => h.rank('nobody', a))).toEqual([0, 2, 2, 2]);
  });

  it('keyed per process: two histories (two processes) do not find each other’s entries', () => {
    const one = history().history;
    const two = history().history;
    one.rememberVerified('human', HASH, 'right');
    expect(two.verifiedRecently('human', HASH, 'right')).toBe(false);
  });
});
