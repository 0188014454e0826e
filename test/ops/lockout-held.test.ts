import { describe, expect, it } from 'vitest';
import { FailureBudget, HOLD_MS, MAX_LOCKS } from '../../lib/ops/lockout.js';
import { MemoryCounters, type CounterKey, type CounterLimit, type Counters } from '../../lib/ops/counters.js';

const ATTEMPTS: CounterLimit = { name: 'auth-attempts:test', points: 4, duration: 900 };
const FAILURES: CounterLimit = { name: 'auth-failures:test', points: 4, duration: 900 };
const KEY: CounterKey = { tag: 'app-1', rest: '127.0.0.1' };

/** Real memory counters, with the slots given back counted. */
function countingCounters(): { counters: Counters; released: CounterKey[] } {
  const inner = new MemoryCounters();
  const released: CounterKey[] = [];
  const counters: Counters = {
    shared: false,
    chain: (entries) => inner.chain(entries),
    take: (limit, key) => inner.take(limit, key),
    reserve: (attempts, failures, key) => inner.reserve(attempts, failures, key),
    release: async (attempts, key) => {
      released.push(key);
      await inner.release(attempts, key);
    },
    spend: (failures, key) => inner.spend(failures, key),
    close: () => inner.close(),
  };
  return { counters, released };
}

/** A budget on an injected clock; the sweep is driven by the test through giveBackIdle. */
function budgetAt(start: number) {
  const clock = { now: start };
  const { counters, released } = countingCounters();
  const guarded = async <T>(operation: () => Promise<T>): Promise<T | undefined> => operation();
  const budget = new FailureBudget(counters, ATTEMPTS, FAILURES, guarded, HOLD_MS, () => clock.now);
  return { budget, clock, released };
}

async function succeed(budget: FailureBudget): Promise<void> {
  const reservation = await budget.reserve(KEY);
  if (!('slot' in reservation)) throw new Error(`expected a slot, got ${JSON.stringify(reservation)}`);
  reservation.slot.release();
}

describe('lock-out slots held after a success', () => {
  it('go back at the first sweep after HOLD_MS, not before', async () => {
    const { budget, clock, released } = budgetAt(1_000_000);
    await succeed(budget);
    await budget.giveBackIdle(clock.now + HOLD_MS - 1);
    expect(released).toEqual([]);
    await budget.giveBackIdle(clock.now + HOLD_MS);
    expect(released).toEqual([KEY]);
    await budget.close();
  });

  it('are taken by the next check of the key, which holds its own again: one slot counted however many checks', async () => {
    const { budget, clock, released } = budgetAt(1_000_000);
    // More successes than the budget: each check takes the slot the one before it held.
    for (let i = 0; i < ATTEMPTS.points * 3; i++) {
      await succeed(budget);
      clock.now += 1_000;
    }
    expect(released).toEqual([]);
    // The slot held last was held at the last check: it is not due until HOLD_MS after that.
    await budget.giveBackIdle(clock.now - 1_000 + HOLD_MS - 1);
    expect(released).toEqual([]);
    await budget.giveBackIdle(clock.now - 1_000 + HOLD_MS);
    expect(released).toEqual([KEY]);
    await budget.close();
  });

  it('still count against the budget while held: with one held and three more in flight, a fifth check waits for one to end', async () => {
    const { budget } = budgetAt(1_000_000);
    await succeed(budget);
    // The held slot and three new ones: the budget (4) is in flight.
    const inFlight = await Promise.all([
      budget.reserve(KEY),
      budget.reserve(KEY),
      budget.reserve(KEY),
      budget.reserve(KEY),
    ]);
    const slots = inFlight.map((r) => ('slot' in r ? r.slot : undefined));
    expect(slots.every((slot) => slot !== undefined)).toBe(true);
    const fifth = budget.reserve(KEY);
    expect(await Promise.race([fifth, new Promise((resolve) => setImmediate(() => resolve('waiting')))])).toBe(
      'waiting',
    );
    slots[0]!.release();
    expect('slot' in (await fifth)).toBe(true);
    await budget.close();
  });
});

describe('keys known to be locked (answered with no counter work)', () => {
  it('past MAX_LOCKS the oldest lock is forgotten first, one at a time; the newest are kept', async () => {
    const inner = new MemoryCounters();
    let asked = 0;
    const counters: Counters = {
      shared: false,
      chain: (entries) => inner.chain(entries),
      take: (limit, key) => inner.take(limit, key),
      reserve: (attempts, failures, key) => {
        asked++;
        return inner.reserve(attempts, failures, key);
      },
      release: (attempts, key) => inner.release(attempts, key),
      spend: (failures, key) => inner.spend(failures, key),
      close: () => inner.close(),
    };
    const one = (name: string): CounterLimit => ({ name, points: 1, duration: 900 });
    const guarded = async <T>(operation: () => Promise<T>): Promise<T | undefined> => operation();
    const budget = new FailureBudget(counters, one('attempts'), one('failures'), guarded, 0, () => 1_000_000);
    const key = (i: number): CounterKey => ({ tag: `app-${i}`, rest: '127.0.0.1' });
    // One refused check locks a key (a budget of 1): one lock more than the cache keeps.
    for (let i = 0; i <= MAX_LOCKS; i++) {
      const reservation = await budget.reserve(key(i));
      if (!('slot' in reservation)) throw new Error(`expected a slot for key ${i}`);
      await reservation.slot.spend();
    }
    const lockedWith = async (i: number): Promise<number> => {
      const before = asked;
      expect(await budget.reserve(key(i))).toEqual({ retryAfter: 900 });
      return asked - before;
    };
    // The second oldest and the newest are still known here: refused with no counter read.
    expect(await lockedWith(1)).toBe(0);
    expect(await lockedWith(MAX_LOCKS)).toBe(0);
    // The oldest was forgotten: the counters, which hold the truth, are asked, and still refuse it.
    expect(await lockedWith(0)).toBe(1);
    await budget.close();
  });
});
