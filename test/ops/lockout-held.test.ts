import { describe, expect, it } from 'vitest';
import { FailureBudget, HOLD_MS } from '../../lib/ops/lockout.js';
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
