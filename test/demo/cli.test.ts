/**
 * The demo's command line as a newcomer meets it: `npm run demo` serves both sites and stops cleanly on
 * SIGTERM; a bad config file is one line on stderr and exit code 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../demo-app/config.js';

const dir = mkdtempSync(join(tmpdir(), 'netauth-demo-cli-'));
const children = new Set<ChildProcess>();

afterEach(() => {
  // A test that failed half-way must not leave its demo running (the whole process group: npm, sh, node).
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  children.clear();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, content: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

/** Spawns in its own process group, so the test can stop everything it started. */
function run(
  command: string,
  args: string[],
): {
  child: ChildProcess;
  output: () => { stdout: string; stderr: string };
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
} {
  const env = { ...process.env };
  delete env.REDIS_URL; // memory stores, whatever the environment says
  const child = spawn(command, args, { cwd: process.cwd(), env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => ({ stdout, stderr }), exit };
}

/** Waits for the banner and returns the two URLs it prints. */
async function urls(
  output: () => { stdout: string; stderr: string },
  exit: Promise<unknown>,
): Promise<{ app: string; gateway: string }> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const { stdout, stderr } = output();
    const app = /Sample application: (http:\/\/\S+?)\/?\s/.exec(stdout)?.[1];
    const gateway = /Operator gateway: +(http:\/\/\S+?)\/?\s/.exec(stdout)?.[1];
    if (app && gateway) return { app, gateway };
    const exited = await Promise.race([exit.then(() => true), new Promise((r) => setTimeout(() => r(false), 100))]);
    if (exited || Date.now() > deadline)
      throw new Error(`the demo did not print its URLs\nstdout: ${stdout}\nstderr: ${stderr}`);
  }
}

const freePorts = { ports: { gateway: 0, app: 0 } };
/** Beside the sample app's CAMARA client, a backend client with a secret, for requests sent by hand. */
const FRAUD_CHECKER = {
  clientId: 'fraud-checker',
  clientSecret: 'fraud-checker-secret',
  grantTypes: ['urn:openid:params:grant-type:ciba'],
  scopes: ['dpv:FraudPreventionAndDetection#sim-swap'],
};
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

describe('demo command line', () => {
  it('npm run demo serves the sample application and the operator gateway', async () => {
    // A secret client: outside the CAMARA profile the demo runs with by default.
    const config = { ...freePorts, profile: 'none', clients: [...DEFAULT_CONFIG.clients, FRAUD_CHECKER] };
    const { output, exit, child } = run('npm', [
      'run',
      '--silent',
      'demo',
      '--',
      '--config',
      configFile('ports.json', config),
    ]);
    const { app, gateway } = await urls(output, exit);
    const home = await fetch(`${app}/`);
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toMatch(/^text\/html/);
    const page = await home.text();
    expect(page).toContain('Verify my number');
    expect(page).toContain('Check for a SIM swap');
    const operator = await fetch(`${gateway}/`);
    expect(operator.status).toBe(200);
    expect(await operator.text()).toContain('network API gateway');
    const discovery = (await (await fetch(`${gateway}/apigateway/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(discovery.issuer).toBe(`${gateway}/apigateway`);
    // The sample app is a CAMARA-profile client: private_key_jwt, its public key served by the app itself.
    expect(discovery.token_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'private_key_jwt']);
    const jwks = (await (await fetch(`${app}/jwks.json`)).json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys).toEqual([
      expect.objectContaining({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: expect.any(String) }),
    ]);
    expect(jwks.keys[0]).not.toHaveProperty('d');

    // While you click, the gateway's events appear as one readable line each.
    const body = () =>
      new URLSearchParams({ login_hint: 'tel:+34600000001', scope: 'dpv:FraudPreventionAndDetection sim-swap' });
    const bcAuthorize = await fetch(`${gateway}/apigateway/bc-authorize`, {
      method: 'POST',
      headers: { authorization: basic('fraud-checker', 'fraud-checker-secret') },
      body: body(),
    });
    expect(bcAuthorize.status).toBe(200);
    // The app's client has no secret: whatever is sent as one fails.
    const withSecret = await fetch(`${gateway}/apigateway/bc-authorize`, {
      method: 'POST',
      headers: { authorization: basic('demo-app', 'demo-app-secret-change-me') },
      body: body(),
    });
    expect(withSecret.status).toBe(401);
    const line =
      /^ {2}gateway {2}\d\d:\d\d:\d\d {2}ciba\.requested +client=fraud-checker subscriber=sub-0001 purpose=FraudPreventionAndDetection scopes=sim-swap identifiedBy=tel$/m;
    for (let i = 0; i < 50 && !line.test(output().stdout); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(output().stdout).toMatch(line);
    expect(output().stdout).toMatch(
      /^ {2}gateway {2}\S+ {2}request\.completed +endpoint=bc-authorize method=POST status=200 outcome=ok ms=[\d.]+$/m,
    );
    process.kill(-child.pid!, 'SIGTERM');
    await exit;
  });

  it('stops cleanly on SIGTERM: exit code 0', async () => {
    const { output, exit, child } = run(process.execPath, [
      '--import',
      'tsx',
      'demo-app/main.ts',
      '--config',
      configFile('ports2.json', freePorts),
    ]);
    const { gateway } = await urls(output, exit);
    // The embedded defaults run the CAMARA profile: private_key_jwt is the only client authentication.
    const discovery = (await (await fetch(`${gateway}/apigateway/.well-known/openid-configuration`)).json()) as {
      token_endpoint_auth_methods_supported: string[];
    };
    expect(discovery.token_endpoint_auth_methods_supported).toEqual(['private_key_jwt']);
    child.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(output().stdout).toContain('demo stopped');
    expect(output().stderr).toBe('');
  });

  it('a bad config file: one line naming the field, exit code 1, no stack trace', async () => {
    const bad = configFile('bad.json', {
      subscribers: [
        { id: 'a', phoneNumber: '+34600000001' },
        { id: 'b', phoneNumber: '0034 600' },
      ],
    });
    const { output, exit } = run(process.execPath, ['--import', 'tsx', 'demo-app/main.ts', '--config', bad]);
    expect((await exit).code).toBe(1);
    expect(output().stderr).toBe(
      `demo config ${bad}: subscribers[1].phoneNumber: must be +<E.164>, e.g. +34600000001\n`,
    );
    expect(output().stdout).toBe('');
  });

  it('a missing file and an unknown argument: exit code 1 with the reason', async () => {
    const missing = run(process.execPath, ['--import', 'tsx', 'demo-app/main.ts', '--config', join(dir, 'nope.json')]);
    const unknown = run(process.execPath, ['--import', 'tsx', 'demo-app/main.ts', '--port', '3000']);
    expect((await missing.exit).code).toBe(1);
    expect(missing.output().stderr).toMatch(/^demo config .*nope\.json: cannot read the file \(no such file\)\n$/);
    expect((await unknown.exit).code).toBe(1);
    expect(unknown.output().stderr).toMatch(/^demo: unknown argument "--port"\n/);
    expect(unknown.output().stderr).not.toMatch(/\n\s+at /);
  });
});
