/**
 * Counts the work a synchronous parse does, instead of timing it: every element (or character) that the
 * built-in array and string methods walk or copy while `fn` runs. Quadratic parsing hides exactly there (a
 * search of everything seen so far per token, a copy of the whole array per repeat), so a count that grows
 * linearly with the input says the parse is linear, whatever the machine's speed.
 */
type Method = (this: unknown, ...args: unknown[]) => unknown;

const WALKED_ARRAY = [
  'includes',
  'indexOf',
  'lastIndexOf',
  'some',
  'every',
  'find',
  'findIndex',
  'filter',
  'map',
  'forEach',
  'reduce',
  'join',
  'splice',
] as const;
const COPIED_ARRAY = ['flat', 'concat', 'slice'] as const;
const WALKED_STRING = ['includes', 'indexOf', 'lastIndexOf', 'split', 'replace', 'toLowerCase', 'trim'] as const;
const COPIED_STRING = ['slice', 'substring'] as const;

export function countWork(fn: () => void): number {
  let work = 0;
  const restore: Array<() => void> = [];
  const patch = (proto: object, name: string, measure: (self: unknown, result: unknown) => number): void => {
    const original = (proto as Record<string, Method>)[name]!;
    (proto as Record<string, Method>)[name] = function (this: unknown, ...args: unknown[]) {
      const result = original.apply(this, args);
      work += measure(this, result);
      return result;
    };
    restore.push(() => {
      (proto as Record<string, Method>)[name] = original;
    });
  };
  const length = (value: unknown): number => (value as { length?: number } | null)?.length ?? 0;
  for (const name of WALKED_ARRAY) patch(Array.prototype, name, (self) => length(self));
  for (const name of COPIED_ARRAY) patch(Array.prototype, name, (_self, result) => length(result));
  for (const name of WALKED_STRING) patch(String.prototype, name, (self) => length(self));
  for (const name of COPIED_STRING) patch(String.prototype, name, (_self, result) => length(result));
  try {
    fn();
  } catch {
    // A parse that refuses its input has still done its work; the count is what matters.
  } finally {
    for (const undo of restore.reverse()) undo();
  }
  return work;
}
