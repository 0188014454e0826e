/**
 * The TypeScript examples of README.md and docs/*.md, as the files a reader would paste them into.
 * Used by docs-examples.test.ts (compiled against lib/) and by .ci/package-check.ts, which imports it
 * (compiled and run against the packed tarball).
 *
 * Above a block, HTML comments (invisible on GitHub and npm) may say:
 * - `<!-- example: gateway.ts -->`: the block is a complete program; CI runs it under that name.
 * - `<!-- prelude: declare const netauth: NetAuthClient; -->`: code the block relies on from the text
 *   around it, prepended when compiling it (use sparingly; shared names go in doc-placeholders.d.ts).
 * - `<!-- inside: lib/gateway/grants -->`: the block is a module of the package's own sources, in that folder
 *   (a contributor's plug-in, docs/architecture.md): its relative imports resolve there. It compiles against
 *   lib/ only; the tarball ships no sources, so .ci/package-check.ts leaves it out.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface DocExample {
  /** Markdown file, relative to the repository root. */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  prelude: string;
  /** File name when the block is a runnable program (`<!-- example: … -->`). */
  example: string | undefined;
  /** The folder of lib/ the block is a module of (`<!-- inside: … -->`), when it is one. */
  inside?: string | undefined;
}

const FENCE_TS = /^```(?:ts|typescript)\s*$/;
const FENCE_END = /^```\s*$/;
const DIRECTIVE = /^<!--\s*(example|prelude|inside):\s*(.*?)\s*-->$/;

export function docFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

export function extractExamples(doc: string, text: string): DocExample[] {
  const lines = text.split('\n');
  const out: DocExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!FENCE_TS.test(lines[i]!)) continue;
    const end = lines.findIndex((l, j) => j > i && FENCE_END.test(l));
    if (end < 0) throw new Error(`${doc}:${i + 1}: a TypeScript block that never closes`);
    let example: string | undefined;
    let inside: string | undefined;
    const prelude: string[] = [];
    for (let j = i - 1; j >= 0; j--) {
      const above = lines[j]!.trim();
      if (above === '') continue;
      const directive = DIRECTIVE.exec(above);
      if (!directive) break;
      if (directive[1] === 'example') example = directive[2];
      else if (directive[1] === 'inside') inside = directive[2];
      else prelude.unshift(directive[2]!);
    }
    const code = lines.slice(i + 1, end).join('\n');
    out.push({ doc, line: i + 1, code, prelude: prelude.join('\n'), example, ...(inside ? { inside } : {}) });
    i = end;
  }
  return out;
}

export function allExamples(root: string): DocExample[] {
  return docFiles(root).flatMap((doc) => extractExamples(doc, readFileSync(join(root, doc), 'utf8')));
}

/**
 * The module a block compiles as: its prelude, the block, and `export {}` so that every block is a module
 * (its names shadow the placeholders instead of clashing with other blocks).
 */
export function moduleText(example: DocExample): string {
  return `${example.prelude === '' ? '' : `${example.prelude}\n`}${example.code}\nexport {};\n`;
}

/** Where line `index` (0-based) of moduleText(example) comes from. */
export function sourceLine(example: DocExample, index: number): string {
  const preludeLines = example.prelude === '' ? 0 : example.prelude.split('\n').length;
  return index < preludeLines
    ? `${example.doc}:${example.line - 1} (prelude)`
    : `${example.doc}:${example.line + 1 + index - preludeLines}`;
}
