/**
 * Summarises a V8 .cpuprofile (from `npm run bench -- --profile <server id>`, or `node --cpu-prof`):
 * the functions with the most self time, and the most inclusive time spent under each function.
 *   npx tsx bench/profile-summary.ts bench/profiles/<file>.cpuprofile [top=25] [filter]
 * `filter` keeps functions whose file path contains it (e.g. `/lib/` for express-netauth's own code).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, filter] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top] [filter]\n');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Time per sample: timeDeltas[i] is the gap before sample i.
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const root = path.resolve('.');
function label(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const where = url ? `${url.replace(/^file:\/\//, '').replace(`${root}/`, '')}:${lineNumber + 1}` : '';
  return `${functionName || '(anonymous)'} ${where}`.trim();
}

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  self.set(label(n), (self.get(label(n)) ?? 0) + us);
  // Inclusive: every distinct function on the stack gets the sample once.
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusive.set(l, (inclusive.get(l) ?? 0) + us);
  }
}

const keep = (l: string): boolean => !filter || l.includes(filter);
const print = (title: string, m: Map<string, number>): void => {
  process.stdout.write(`${title}\n`);
  for (const [l, us] of [...m]
    .filter(([l]) => keep(l))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    process.stdout.write(`${((100 * us) / total).toFixed(1).padStart(6)}%  ${l}\n`);
  }
};
/** Where self time went, by package (node_modules/<pkg>), by folder of this repo, or by runtime part. */
function group(l: string): string {
  const where = l.slice(l.lastIndexOf(' ') + 1);
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where);
  if (pkg) return pkg[1]!;
  if (where.startsWith('node:')) return 'node internals';
  if (/^(lib|bench|test)\//.test(where)) return where.split('/').slice(0, 2).join('/').replace(/:\d+$/, '');
  if (l.startsWith('(')) return l;
  return 'native/builtins';
}
const groups = new Map<string, number>();
for (const [l, us] of self) groups.set(group(l), (groups.get(group(l)) ?? 0) + us);
const busy = total - (self.get('(idle)') ?? 0);

process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy\n`);
print('self time:', self);
print('inclusive time:', inclusive);
process.stdout.write('self time by package or folder (share of busy time):\n');
for (const [g, us] of [...groups]
  .filter(([g]) => g !== '(idle)')
  .sort((a, b) => b[1] - a[1])
  .slice(0, top)) {
  process.stdout.write(`${((100 * us) / busy).toFixed(1).padStart(6)}%  ${g}\n`);
}
