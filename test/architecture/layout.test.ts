import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIB = join(ROOT, 'lib');
/** The layout issue's bound: a folder a newcomer can take in at a glance. */
const MAX_FILES_PER_FOLDER = 12;
/** The rooms below the gateway: they never import `gateway/` or `guard/` (issue 30). */
const LOWER_ROOMS = ['ops', 'stores', 'consent', 'identity', 'registry'];
const UPPER_ROOMS = ['gateway', 'guard'];
/**
 * The floors of lib/gateway/, top first (issue 45): the composition root builds everything; endpoints stand on
 * grants, grants on tokens, tokens on requests, client authentication and HTTP. A room imports only rooms below it.
 */
const GATEWAY_FLOORS = [
  'router.ts',
  'context.ts',
  'options-check.ts',
  'endpoints',
  'grants',
  'consents.ts',
  'tokens',
  'levers',
  'requests',
  'client-auth',
  'http',
  'page-language.ts',
  'options.ts',
];
/**
 * Arrows that still run back up: none (issue 45 took the last down; options.ts now holds the option types the
 * rooms above it read). A ratchet: the list stays empty.
 */
const GATEWAY_ARROWS_LEFT: readonly string[] = [];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports of a module (`import`, `import type`, `export … from`), as files under lib/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?from\s*'(\.{1,2}\/[^']+)'/g)) {
    found.push(normalize(join(dirname(file), match[1]!)).replace(/\.js$/, '.ts'));
  }
  return found;
}

/** Imports from a lower room into an upper one, as `importer -> imported` (paths from the root). */
function upwardImports(graph: Map<string, string[]>): string[] {
  const room = (file: string): string | undefined => relative(LIB, file).split('/')[0];
  return [...graph].flatMap(([file, deps]) => {
    if (!LOWER_ROOMS.includes(room(file) ?? '')) return [];
    const upward = deps.filter((dep) => UPPER_ROOMS.includes(room(dep) ?? ''));
    return upward.map((dep) => `${relative(ROOT, file)} -> ${relative(ROOT, dep)}`);
  });
}

/** Imports inside lib/gateway/ from a room to one on a higher floor, as `importer -> imported`. */
function gatewayArrowsUp(graph: Map<string, string[]>): string[] {
  const gateway = join(LIB, 'gateway');
  const floor = (file: string): number => {
    const path = relative(gateway, file);
    return path.startsWith('..') ? -1 : GATEWAY_FLOORS.indexOf(path.split('/')[0]!);
  };
  return [...graph].flatMap(([file, deps]) => {
    const from = floor(file);
    if (from < 0) return [];
    const upward = deps.filter((dep) => {
      const to = floor(dep);
      return to >= 0 && to < from;
    });
    return upward.map((dep) => `${relative(ROOT, file)} -> ${relative(ROOT, dep)}`);
  });
}

/**
 * Where a module reaches into Node's or Express's internals: Node's listener table (`_events`, `_eventsCount`),
 * or a property defined on a prototype (one named `…prototype…`, or one obtained through `getPrototypeOf`).
 */
function internalsReached(text: string): string[] {
  const found: string[] = [];
  if (/_events\b|_eventsCount/.test(text)) found.push('_events');
  if (/\bdefinePropert(?:y|ies)\s*\(\s*[\w.$]*proto/i.test(text)) found.push('defineProperty on a prototype');
  if (/\bdefinePropert(?:y|ies)\s*\(/.test(text) && /\bgetPrototypeOf\s*\(/.test(text)) {
    found.push('defineProperty beside getPrototypeOf');
  }
  return found;
}

/** Results that may come at once or through a promise: `Answer<T>`-style types and `instanceof Promise` branches. */
function mixedResults(text: string): string[] {
  const found: string[] = [];
  if (/instanceof\s+Promise\b/.test(text)) found.push('instanceof Promise');
  if (/\bAnswer</.test(text)) found.push('Answer<');
  return found;
}

/** Every finding of `rule` in lib/, as `file: finding`. */
function findingsIn(files: readonly string[], rule: (text: string) => string[]): string[] {
  return files.flatMap((file) => rule(readFileSync(file, 'utf8')).map((what) => `${relative(ROOT, file)}: ${what}`));
}

/** Every import cycle, each as the list of files around it (Tarjan's strongly connected components). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indices.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, indices.get(next)!));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node))
        found.push(component.map((f) => relative(ROOT, f)).sort());
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

describe('the layout of lib/', () => {
  const files = sources(LIB);

  it(`no folder holds more than ${MAX_FILES_PER_FOLDER} files`, () => {
    const perFolder = new Map<string, number>();
    for (const file of files)
      perFolder.set(relative(ROOT, dirname(file)), (perFolder.get(relative(ROOT, dirname(file))) ?? 0) + 1);
    const crowded = [...perFolder].filter(([, count]) => count > MAX_FILES_PER_FOLDER);
    expect(crowded).toEqual([]);
  });

  it('has no import cycle, type-only imports included', () => {
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    // The graph must really have been read: every module but the leaves imports something.
    expect([...graph.values()].filter((deps) => deps.length > 0).length).toBeGreaterThan(files.length / 2);
    expect(cycles(graph)).toEqual([]);
  });

  it('finds a cycle when there is one (the detector itself)', () => {
    const a = join(LIB, 'a.ts');
    const b = join(LIB, 'b.ts');
    const c = join(LIB, 'c.ts');
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
          [c, [a]],
        ]),
      ),
    ).toEqual([['lib/a.ts', 'lib/b.ts']]);
  });

  it('docs/architecture.md names only files that exist', () => {
    const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const named = [...text.matchAll(/`([\w./-]+\.ts)`/g)].map((m) => m[1]!);
    const known = [...files, ...sources(join(ROOT, 'test'))].map((f) => relative(ROOT, f));
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((name) => !known.some((file) => file === name || file.endsWith(`/${name}`)))).toEqual([]);
  });

  it('the rooms below the gateway never import gateway/ or guard/', () => {
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    expect(upwardImports(graph)).toEqual([]);
    // The rule itself: an upward import is found, a downward one is not.
    const metrics = join(LIB, 'ops/metrics.ts');
    const headers = join(LIB, 'gateway/http/headers.ts');
    const both = new Map([
      [metrics, [headers]],
      [headers, [metrics]],
    ]);
    expect(upwardImports(both)).toEqual(['lib/ops/metrics.ts -> lib/gateway/http/headers.ts']);
  });

  it('inside lib/gateway/, every room has a floor and imports only rooms below it', () => {
    const gateway = join(LIB, 'gateway');
    const rooms = new Set(files.filter((f) => f.startsWith(gateway)).map((f) => relative(gateway, f).split('/')[0]!));
    expect([...rooms].filter((room) => !GATEWAY_FLOORS.includes(room))).toEqual([]);
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    expect(gatewayArrowsUp(graph)).toEqual(GATEWAY_ARROWS_LEFT);
    // The rule itself: tokens/ reaching up into grants/ is found, grants/ reaching down into tokens/ is not.
    const grant = join(gateway, 'grants/ciba.ts');
    const tokens = join(gateway, 'tokens/access-tokens.ts');
    const sample = new Map([
      [grant, [tokens]],
      [tokens, [grant]],
    ]);
    expect(gatewayArrowsUp(sample)).toEqual(['lib/gateway/tokens/access-tokens.ts -> lib/gateway/grants/ciba.ts']);
  });

  it('reaches Node and Express through public APIs only: no listener table, nothing defined on a prototype', () => {
    expect(findingsIn(files, internalsReached)).toEqual([]);
    // The rule itself.
    const onPrototype = ['defineProperty on a prototype'];
    expect(internalsReached('emitter._events[name] = undefined; emitter._eventsCount = 0;')).toEqual(['_events']);
    expect(internalsReached("Object.defineProperty(app.request.__proto__, 'netauth', accessor)")).toEqual(onPrototype);
    expect(internalsReached("Object.defineProperty(IncomingMessage.prototype, 'netauth', get)")).toEqual(onPrototype);
    const viaChain = "const base = Object.getPrototypeOf(req);\nObject.defineProperty(base, 'netauth', accessor);";
    expect(internalsReached(viaChain)).toEqual(['defineProperty beside getPrototypeOf']);
    expect(internalsReached('Object.defineProperty(copy, key, { value, enumerable: true })')).toEqual([]);
  });

  it('functions are synchronous or async, never both: no Answer<T>, no instanceof Promise', () => {
    expect(findingsIn(files, mixedResults)).toEqual([]);
    // The rule itself.
    expect(mixedResults('const x = a instanceof Promise ? await a : a;')).toEqual(['instanceof Promise']);
    expect(mixedResults('reserve(key: CounterKey): Answer<Reservation>')).toEqual(['Answer<']);
    expect(mixedResults('reserve(key: CounterKey): Promise<ReserveAnswer>')).toEqual([]);
  });
});
