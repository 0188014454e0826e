/**
 * The small checks every module uses to validate its options at start-up. Each failure is a TypeError whose
 * message names the option (its path from `createNetAuth`'s options) and says how to fix it.
 */

/**
 * The option names of `T`, as a set. Written as a record of every key, so adding an option to the type without
 * adding it here (or the reverse) is a compile error: the list of known names cannot drift from the type.
 */
export function optionNames<T>(names: Record<keyof T, true>): ReadonlySet<string> {
  return new Set(Object.keys(names));
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Levenshtein distance, case-insensitive, for "did you mean" (names are short; quadratic is nothing here). */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= y.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[y.length]!;
}

/** The known name closest to an unknown one, when it is close enough to be a typo (or a shortening of it). */
function closest(name: string, known: ReadonlySet<string>): string | undefined {
  const lower = name.toLowerCase();
  if (lower.length >= 3) {
    const longer = [...known].find((candidate) => candidate.toLowerCase().startsWith(lower));
    if (longer !== undefined) return longer;
  }
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 4)) ? best : undefined;
}

/**
 * Refuses names the package does not know. TypeScript catches a misspelt option; JavaScript does not, and a
 * misspelt option is usually a protection silently off (`pairwiseSlat`, `requirePKCE`) or a default silently
 * kept, so it is an error, with the closest known name. `gone` maps former names to what replaced them.
 * `where` is how a message starts (`lifetimes.`, `client app-1: `); `what` is `option` or `field`.
 */
export function checkNames(
  value: Record<string, unknown>,
  known: ReadonlySet<string>,
  where: string,
  what: 'option' | 'field' = 'option',
  gone: Readonly<Record<string, string>> = {},
): void {
  for (const name of Object.keys(value)) {
    if (known.has(name)) continue;
    if (Object.hasOwn(gone, name)) throw new TypeError(`${where}${name} is gone: ${gone[name]}`);
    const suggestion = closest(name, known);
    throw new TypeError(
      `${where}${name}: unknown ${what}${suggestion ? ` (did you mean "${suggestion}"?)` : ''}; ` +
        `correct or remove it (known: ${[...known].join(', ')})`,
    );
  }
}

/** An object of options (or undefined when optional): its names checked. */
export function checkOptionObject(
  value: unknown,
  path: string,
  known: ReadonlySet<string>,
  gone?: Readonly<Record<string, string>>,
): void {
  if (value === undefined) return;
  if (!isPlainObject(value)) throw new TypeError(`${path} must be an object of options ({ ${[...known].join(', ')} })`);
  checkNames(value, known, `${path}.`, 'option', gone);
}

export function checkFunction(value: unknown, path: string, shape: string): void {
  if (value !== undefined && typeof value !== 'function') throw new TypeError(`${path} must be a function: ${shape}`);
}

export function checkBoolean(value: unknown, path: string): void {
  if (value !== undefined && typeof value !== 'boolean')
    throw new TypeError(`${path} must be true or false, not ${describe(value)}`);
}

export function checkString(value: unknown, path: string, meaning: string): void {
  if (value !== undefined && (typeof value !== 'string' || value === '')) {
    throw new TypeError(`${path} must be a non-empty string (${meaning}), not ${describe(value)}`);
  }
}

/** An object that must have the named methods: an implementation of one of the package's interfaces. */
export function checkImplements(value: unknown, path: string, methods: readonly string[], fix: string): void {
  const isObject = typeof value === 'object' && value !== null;
  const missing = methods.filter((m) => typeof (value as Record<string, unknown> | null)?.[m] !== 'function');
  if (isObject && missing.length === 0) return;
  throw new TypeError(
    `${path} must ${fix}${isObject ? ` (missing: ${missing.join(', ')})` : `, not ${describe(value)}`}`,
  );
}

/** A value as a message may show it: its type, never its content (a misplaced secret stays out of the message). */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
