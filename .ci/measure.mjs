#!/usr/bin/env node
// Runs a command and prints its wall time and the peak memory of its whole process tree (vitest's workers,
// tsc, redis-server and chromium included), sampled from /proc every 200 ms. Two sums: PSS (each shared page
// split between the processes that map it: what the tree takes from the machine) and RSS (shared pages
// counted once per process, so chromium's processes count its binary several times). Exits with the
// command's exit code. Usage: node .ci/measure.mjs <command> [args...]
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const [cmd, ...args] = process.argv.slice(2);
if (!cmd) {
  console.error('usage: node .ci/measure.mjs <command> [args...]');
  process.exit(2);
}

const MB = 1024 * 1024;

/** pid → parent pid and name, for every process that is still there. */
function processes() {
  const procs = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The name may hold spaces and parentheses: the fields start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      procs.set(Number(entry), { ppid: Number(fields[1]), name });
    } catch {
      // Ended between readdir and read.
    }
  }
  return procs;
}

/** RSS and PSS in bytes, from smaps_rollup; zeros for a process that ended meanwhile. */
function memoryOf(pid) {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0) * 1024;
    return { rss: kb('Rss'), pss: kb('Pss') };
  } catch {
    return { rss: 0, pss: 0 };
  }
}

function sampleTree(root) {
  const procs = processes();
  const children = new Map();
  for (const [pid, { ppid }] of procs) {
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(pid);
  }
  const members = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop();
    if (procs.has(pid)) members.push({ name: procs.get(pid).name, ...memoryOf(pid) });
    stack.push(...(children.get(pid) ?? []));
  }
  return {
    rss: members.reduce((sum, p) => sum + p.rss, 0),
    pss: members.reduce((sum, p) => sum + p.pss, 0),
    members,
  };
}

const started = process.hrtime.bigint();
const child = spawn(cmd, args, { stdio: 'inherit' });
let peak = { rss: 0, pss: 0, members: [] };
let peakRss = 0;
/** The largest single process seen (its RSS): what `/usr/bin/time` would report for the tree. */
let largest = { name: '', rss: 0 };
const timer = setInterval(() => {
  if (child.pid === undefined) return;
  const now = sampleTree(child.pid);
  if (now.pss > peak.pss) peak = now;
  peakRss = Math.max(peakRss, now.rss);
  for (const member of now.members) if (member.rss > largest.rss) largest = member;
}, 200);

child.on('exit', (code, signal) => {
  clearInterval(timer);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const line = [cmd, ...args].join(' ');
  console.log(
    `measure: ${line}: ${seconds.toFixed(1)} s wall, peak memory ${(peak.pss / MB).toFixed(0)} MB PSS ` +
      `(${(peakRss / MB).toFixed(0)} MB summed RSS); largest process ${(largest.rss / MB).toFixed(0)} MB RSS ` +
      `(${largest.name})`,
  );
  // Which processes made the peak, largest first: where to look when it grows.
  const top = peak.members.sort((a, b) => b.pss - a.pss).slice(0, 8);
  console.log(`measure: at the peak (MB PSS): ${top.map((p) => `${p.name} ${(p.pss / MB).toFixed(0)}`).join(', ')}`);
  process.exit(code ?? (signal ? 1 : 0));
});
