import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIB = join(ROOT, 'lib');
/** The layout issue's bound: a folder a newcomer can take in at a glance. */
const MAX_FILES_PER_FOLDER = 12;

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
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.map((f) => relative(ROOT, f)).sort());
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

describe('the layout of lib/', () => {
  const files = sources(LIB);

  it(`no folder holds more than ${MAX_FILES_PER_FOLDER} files`, () => {
    const perFolder = new Map<string, number>();
    for (const file of files) perFolder.set(relative(ROOT, dirname(file)), (perFolder.get(relative(ROOT, dirname(file))) ?? 0) + 1);
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
    expect(cycles(new Map([[a, [b]], [b, [a]], [c, [a]]]))).toEqual([['lib/a.ts', 'lib/b.ts']]);
  });

  it('docs/architecture.md names only files that exist', () => {
    const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const named = [...text.matchAll(/`([\w./-]+\.ts)`/g)].map((m) => m[1]!);
    const known = [...files, ...sources(join(ROOT, 'test'))].map((f) => relative(ROOT, f));
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((name) => !known.some((file) => file === name || file.endsWith(`/${name}`)))).toEqual([]);
  });
});
