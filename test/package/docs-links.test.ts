/**
 * The documentation's relative links lead somewhere: every link of README.md, bench/README.md and docs/*.md
 * to a file of the repository names a file that exists, and every #anchor a heading of its page (GitHub's
 * slugs). Code and docs cite the protocol decisions as docs/protocol.md, the file in the repository.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { relativeLinks } from './doc-links.js';
import { docFiles } from './docs-examples.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PAGES = [...docFiles(ROOT), 'bench/README.md', 'CHANGELOG.md'];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : walk(path);
    return /\.(ts|md)$/.test(entry.name) ? [path] : [];
  });
}

describe('documentation links', () => {
  it('every relative link names an existing file, and every anchor a heading of that page', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      if (!existsSync(join(ROOT, page))) continue;
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const target of relativeLinks(text)) {
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path));
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} (no such file)`);
        } else if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${page}: ${target} (no heading #${anchor} in ${relative(ROOT, file)})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('the protocol decisions are cited as docs/protocol.md, which exists', () => {
    expect(existsSync(join(ROOT, 'docs/protocol.md'))).toBe(true);
    const bare: string[] = [];
    for (const file of [...walk('lib'), ...walk('test'), ...walk('bench'), ...walk('demo-app'), ...PAGES]) {
      if (!existsSync(join(ROOT, file))) continue;
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // Links to it (relative from docs/), then the spelled-out path; any protocol.md left over is a bare citation.
          const rest = line
            .replace(/\[[^\]]*\]\((?:\.\.\/)*(?:docs\/)?protocol\.md[^)]*\)/g, '')
            .replace(/docs\/protocol\.md/g, '');
          if (rest.includes('protocol.md') && file !== 'test/package/docs-links.test.ts')
            bare.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(bare).toEqual([]);
  });
});
