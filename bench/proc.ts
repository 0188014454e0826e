/**
 * /proc readers: CPU time of the machine and of single processes, and resident memory. Linux only; where
 * /proc is missing every reader returns undefined and the harness says it could not check.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clockTicks: number | undefined;

/** Kernel clock ticks per second (USER_HZ), the unit of /proc CPU times. */
export function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface MachineCpu {
  /** Ticks any core spent running something (user, nice, system, irq, softirq), summed over cores. */
  busy: number;
  /** Ticks the hypervisor took from this machine (another tenant ran). */
  steal: number;
}

export function machineCpu(): MachineCpu | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return { busy: user! + nice! + system! + irq! + softirq!, steal: steal ?? 0 };
  } catch {
    return undefined;
  }
}

/** utime + stime of a process (all its threads), in ticks. */
export function processCpu(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** Resident set size in bytes. */
export function processRss(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export interface CpuSnapshot {
  at: number;
  machine: MachineCpu | undefined;
  processes: Record<string, number | undefined>;
}

export function cpuSnapshot(pids: Record<string, number>): CpuSnapshot {
  const processes: Record<string, number | undefined> = {};
  for (const [name, pid] of Object.entries(pids)) processes[name] = processCpu(pid);
  return { at: performance.now(), machine: machineCpu(), processes };
}

export interface CpuUse {
  wallMs: number;
  /** CPU seconds per wall second (1 = one core fully busy), per named process. */
  processes: Record<string, number | undefined>;
  /** Busy cores not explained by the named processes (other programs, kernel threads). */
  foreign: number | undefined;
  steal: number | undefined;
}

export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot): CpuUse {
  const wallMs = b.at - a.at;
  const perWall = (ticks: number): number => ticks / ticksPerSecond() / (wallMs / 1000);
  const processes: Record<string, number | undefined> = {};
  let ours = 0;
  let known = true;
  for (const name of Object.keys(b.processes)) {
    const before = a.processes[name];
    const after = b.processes[name];
    if (before === undefined || after === undefined) {
      processes[name] = undefined;
      known = false;
      continue;
    }
    processes[name] = perWall(after - before);
    ours += after - before;
  }
  const foreign =
    a.machine && b.machine && known ? Math.max(0, perWall(b.machine.busy - a.machine.busy - ours)) : undefined;
  const steal = a.machine && b.machine ? perWall(b.machine.steal - a.machine.steal) : undefined;
  return { wallMs, processes, foreign, steal };
}
