/**
 * The orchestrator's side of the machine-speed probe (bench/speed-probe.ts): starts it, pins it to the servers'
 * core, and tells how much slower than the run's fastest that core runs a fixed piece of work now.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

export type ProbeRequest = { type: 'probe'; id: number } | { type: 'stop' };
export type ProbeReply = { type: 'ready' } | { type: 'probe'; id: number; ms: number };

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Timings at start-up, the run's first reference (the first ones also warm the probe's code up). */
const CALIBRATION_PROBES = 12;
/**
 * Slower than this against the run's fastest, the machine is slowed down. A slowed machine (servers at half their
 * throughput) ran the probe 1.25-1.4x slower in a full run; a quiet one mostly within 1.15x, with lone spikes of
 * 1.7-3.6x (an interrupt, a process being torn down): so a window counts as slowed only when the probes at both
 * of its edges are.
 */
export const SLOW_LIMIT = 1.2;
/** How long a window waits for a slowed machine to come back before it is measured anyway (and left out). */
export const PATIENCE_MS = 30_000;

export class MachineSpeed {
  private readonly child: ChildProcess;
  private readonly ready: Promise<void>;
  private nextId = 1;
  private readonly waiting = new Map<number, (ms: number) => void>();
  /** The fastest timing of the run so far, in ms. */
  private fastest = Infinity;

  constructor(pin: (pid: number) => void) {
    this.child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, 'speed-probe.ts')], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (message: ProbeReply) => {
        if (message.type === 'ready') {
          try {
            pin(this.child.pid!);
            resolve();
          } catch (error) {
            reject(error as Error);
          }
          return;
        }
        this.waiting.get(message.id)?.(message.ms);
        this.waiting.delete(message.id);
      });
      this.child.on('exit', (code) => reject(new Error(`speed probe exited (${code})`)));
    });
  }

  /** Ready, with the run's first reference taken from a few probes in a row. */
  async start(): Promise<void> {
    await this.ready;
    for (let i = 0; i < CALIBRATION_PROBES; i++) await this.probe();
  }

  /** The probe's timing now, in ms. */
  async probe(): Promise<number> {
    const id = this.nextId++;
    const ms = await new Promise<number>((resolve, reject) => {
      this.waiting.set(id, resolve);
      this.child.send({ type: 'probe', id } satisfies ProbeRequest);
      setTimeout(() => reject(new Error('the speed probe did not answer')), 30_000).unref();
    });
    this.fastest = Math.min(this.fastest, ms);
    return ms;
  }

  /** How much slower than the run's fastest a timing is: 1 = as fast, 2 = half as fast. */
  slowdown(ms: number): number {
    return ms / this.fastest;
  }

  /**
   * A timing once the machine runs at speed again, probing every 2 s for at most PATIENCE_MS (`onWait` is told when
   * it starts waiting); the last timing if it never does.
   */
  async settled(onWait: (slowdown: number) => void): Promise<number> {
    let ms = await this.probe();
    if (this.slowdown(ms) <= SLOW_LIMIT) return ms;
    onWait(this.slowdown(ms));
    const until = performance.now() + PATIENCE_MS;
    while (this.slowdown(ms) > SLOW_LIMIT && performance.now() < until) {
      await sleep(2_000);
      ms = await this.probe();
    }
    return ms;
  }

  stop(): void {
    if (this.child.connected) this.child.send({ type: 'stop' } satisfies ProbeRequest);
  }
}
