/**
 * Starts and stops gateway instances as child processes (test/helpers/gateway-main.ts), so that tests
 * can run several instances sharing one Redis, as behind a load balancer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const SCRIPT = fileURLToPath(new URL('./gateway-main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// Children still running when the test process exits are killed, so none outlive a crashed run.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

const stoppers = new Set<() => Promise<void>>();

/** Stops every instance this process started and has not stopped yet: for afterAll, whatever failed before. */
/**
 * The start-up warnings gateway-main.ts prints on purpose: its fixture issuer is http: off loopback and its consent
 * rule is not confirmed through the operator's channel. Anything else on a process's stderr is a finding.
 */
export const FIXTURE_STARTUP_WARNINGS =
  /^express-netauth: WARNING: (the issuer is http: on gateway\.test|consent for \S+ is recorded on the page's Allow alone)/;

export async function stopGatewayProcesses(): Promise<void> {
  await Promise.all([...stoppers].map((stop) => stop()));
}

export interface GatewayProcess {
  name: string;
  /** `http://127.0.0.1:<port>` */
  url: string;
  pid: number;
  /** Still running (never crashed, never restarted). */
  readonly alive: boolean;
  /** Everything the process wrote to stderr. */
  readonly stderr: string;
  /** The JSON lines the process wrote to stdout after its port (e.g. `{"dataLoss":…}`). */
  readonly reports: Array<Record<string, unknown>>;
  /** SIGTERM, then SIGKILL if it has not exited within 2 s. Safe to call twice. */
  stop(): Promise<void>;
}

/** Starts `node --import tsx gateway-main.ts` and resolves once it reports its port. */
export async function startGatewayProcess(name: string, env: Record<string, string>): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    cwd: ROOT,
    // production: Express would print a stack trace for any error that reached it; the test checks there is none.
    env: { ...process.env, NODE_ENV: 'production', ...env, NETAUTH_INSTANCE: name },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => running.delete(child));

  const stop = async (): Promise<void> => {
    stoppers.delete(stop);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if ((await Promise.race([exited.then(() => true), sleep(2000, false)])) === false) {
      child.kill('SIGKILL');
      await exited;
    }
  };

  stoppers.add(stop);
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`gateway ${name} did not report a port within 20 s:\n${stderr}`)),
        20_000,
      );
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n').find((l) => l.startsWith('{'));
        if (line === undefined) return;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`gateway ${name} exited (${code ?? signal}) before listening:\n${stderr}`));
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    return {
      name,
      url: `http://127.0.0.1:${port}`,
      pid: child.pid!,
      get alive() {
        return child.exitCode === null && child.signalCode === null;
      },
      get stderr() {
        return stderr;
      },
      get reports() {
        // JSON lines only (a library may print other things on stdout), the port line excepted.
        return stdout.split('\n').flatMap((line) => {
          try {
            const report = JSON.parse(line) as unknown;
            return report !== null && typeof report === 'object' && !('port' in report)
              ? [report as Record<string, unknown>]
              : [];
          } catch {
            return [];
          }
        });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
