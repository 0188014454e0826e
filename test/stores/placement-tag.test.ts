import { describe, expect, it } from 'vitest';
import { placementTag } from '../../lib/stores/store.js';

/** The rule as a pattern: what the hand-written reader must agree with. */
const RULE = /^([A-Za-z0-9_-]{1,16})\./;

describe('placementTag', () => {
  it('reads the tag before the first dot, 1 to 16 characters of [A-Za-z0-9_-]', () => {
    expect(placementTag('Ab3dEf_1.kJ8x')).toBe('Ab3dEf_1');
    expect(placementTag('a.b.c')).toBe('a');
    expect(placementTag('-_09azAZ.x')).toBe('-_09azAZ');
    expect(placementTag(`${'x'.repeat(16)}.rest`)).toBe('x'.repeat(16));
    expect(placementTag(`${'x'.repeat(17)}.rest`)).toBeUndefined();
    expect(placementTag('.rest')).toBeUndefined();
    expect(placementTag('no-dot-at-all')).toBeUndefined();
    expect(placementTag('')).toBeUndefined();
    expect(placementTag('tag.')).toBe('tag');
    expect(placementTag('ta g.x')).toBeUndefined();
    expect(placementTag('tä.x')).toBeUndefined();
    expect(placementTag('a+b.x')).toBeUndefined();
  });

  it('agrees with the rule written as a pattern, on random ids', () => {
    const alphabet = 'aZ09_-.+/ ä~:';
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 5000; i++) {
      let id = '';
      const length = random(24);
      for (let j = 0; j < length; j++) id += alphabet[random(alphabet.length)];
      expect([id, placementTag(id)]).toEqual([id, RULE.exec(id)?.[1]]);
    }
  });
});
