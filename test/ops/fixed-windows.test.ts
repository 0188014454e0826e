import { describe, expect, it } from 'vitest';
import { FixedWindows } from '../../lib/ops/fixed-windows.js';
import { MemoryCounters, type CounterLimit } from '../../lib/ops/counters.js';

function windowsAt(start: number, duration = 60) {
  const clock = { now: start };
  return { windows: new FixedWindows(duration, () => clock.now), clock };
}

describe('fixed windows (the memory counters)', () => {
  it('a window starts at its first point and lasts `duration` seconds; every point counts', () => {
    const { windows, clock } = windowsAt(1_000_000);
    expect(windows.add('a', 1)).toEqual({ count: 1, msBeforeNext: 60_000 });
    clock.now += 59_999;
    expect(windows.add('a', 1)).toEqual({ count: 2, msBeforeNext: 1 });
    clock.now += 1;
    // The window ended: a new one starts with this point.
    expect(windows.add('a', 1)).toEqual({ count: 1, msBeforeNext: 60_000 });
  });

  it('keys count apart; a negative add gives points back within the window', () => {
    const { windows } = windowsAt(0);
    windows.add('a', 1);
    windows.add('a', 1);
    windows.add('b', 1);
    expect(windows.add('a', -1).count).toBe(1);
    expect(windows.get('a')?.count).toBe(1);
    expect(windows.get('b')?.count).toBe(1);
    expect(windows.get('c')).toBeUndefined();
  });

  it('an ended window reads as none, and memory holds only live windows (no timer)', () => {
    const { windows, clock } = windowsAt(0, 10);
    for (let i = 0; i < 1000; i++) windows.add(`address-${i}`, 1);
    expect(windows.size).toBe(1000);
    clock.now += 5_000;
    windows.add('late', 1);
    clock.now += 5_000;
    expect(windows.get('address-1')).toBeUndefined();
    expect(windows.size).toBe(1);
    clock.now += 5_000;
    expect(windows.size).toBe(0);
  });

  it("a key whose window restarted is not dropped at its old window's end", () => {
    const { windows, clock } = windowsAt(0, 10);
    windows.add('a', 1);
    clock.now += 10_000;
    windows.add('a', 1); // a new window, ending at 20 s
    clock.now += 5_000;
    expect(windows.get('a')).toEqual({ count: 1, msBeforeNext: 5_000 });
  });
});

describe('memory counters', () => {
  const attempts: CounterLimit = { name: 'attempts', points: 2, duration: 900 };
  const failures: CounterLimit = { name: 'failures', points: 2, duration: 900 };
  const key = { tag: 'app', rest: '127.0.0.1' };

  it('a chain counts each counter only while every one before it let the request through', async () => {
    const counters = new MemoryCounters();
    const first: CounterLimit = { name: 'first', points: 1, duration: 60 };
    const second: CounterLimit = { name: 'second', points: 5, duration: 60 };
    const entries = [
      { limit: first, key: { tag: 's' } },
      { limit: second, key: { tag: 's' } },
    ];
    expect(await counters.chain(entries)).toBeUndefined();
    expect(await counters.chain(entries)).toMatchObject({ index: 0 });
    expect(await counters.chain(entries)).toMatchObject({ index: 0 });
    // The refused requests never reached the second counter: it holds the one that got through.
    const third: CounterLimit = { name: 'second', points: 1, duration: 60 };
    expect(await counters.chain([{ limit: third, key: { tag: 's' } }])).toMatchObject({ index: 0 });
  });

  it('a lock-out slot past the budget is given back, and reports the failures so far', async () => {
    const counters = new MemoryCounters();
    expect(await counters.reserve(attempts, failures, key)).toMatchObject({ taken: true, attempts: 1 });
    expect(await counters.spend(failures, key)).toMatchObject({ failures: 1 });
    expect(await counters.reserve(attempts, failures, key)).toMatchObject({ taken: true, attempts: 2 });
    expect(await counters.reserve(attempts, failures, key)).toMatchObject({ taken: false, failures: 1 });
    await counters.release(attempts, key);
    expect(await counters.reserve(attempts, failures, key)).toMatchObject({ taken: true, attempts: 2 });
  });
});
