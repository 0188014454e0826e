/**
 * The machine-speed probe: a process of its own, pinned to the servers' core, that times a fixed piece of work
 * when asked (over IPC), before and after every measured window, while no server runs on that core. The virtual
 * machines this bench runs on slow down now and then, every core to about half speed for minutes, with no steal
 * time showing inside them: the CPU check cannot see that, this can. bench/machine-speed.ts compares each timing
 * with the fastest of the run.
 */
import type { ProbeReply, ProbeRequest } from './machine-speed.js';

/** About 3 ms of what a server does: integer arithmetic, small objects, strings, a Map. */
function work(): number {
  let x = 0;
  for (let i = 0; i < 400_000; i++) x = (x * 31 + i) | 0;
  const map = new Map<string, { i: number; s: string }>();
  for (let i = 0; i < 4_000; i++) map.set(`k${i}`, { i, s: `v${i * 7}` });
  let total = 0;
  for (const [key, value] of map) total += key.length + value.s.length;
  return x + total;
}

/**
 * The fastest of eight runs in ms, after 30 ms of the same work untimed (a core woken from idle is slow for a
 * moment): a run an interrupt delayed does not count, a slow machine slows all eight.
 */
function time(): number {
  let best = Infinity;
  let sink = 0;
  const warm = performance.now() + 30;
  while (performance.now() < warm) sink += work();
  for (let i = 0; i < 8; i++) {
    const start = performance.now();
    sink += work();
    best = Math.min(best, performance.now() - start);
  }
  // Keeps the work from being optimised away.
  if (sink === 0.5) process.stderr.write('');
  return best;
}

process.on('message', (message: ProbeRequest) => {
  if (message.type === 'probe') process.send?.({ type: 'probe', id: message.id, ms: time() } satisfies ProbeReply);
  else process.exit(0);
});
process.send?.({ type: 'ready' } satisfies ProbeReply);
