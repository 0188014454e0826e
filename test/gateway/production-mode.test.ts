import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createNetAuth, RedisStore, type NetAuthOptions } from '../../lib/index.js';
import { CLIENTS, MOBILE_RANGES, POLICY, SUBSCRIBERS } from '../helpers/gateway.js';
import { ecKey } from '../helpers/keys.js';
import { allExamples } from '../package/docs-examples.js';

/**
 * Issue 44, production mode: with `mode: 'production'` (or NODE_ENV=production, Express's convention) what a
 * development start only warns about is a start-up error naming the option; `mode: 'development'` keeps the
 * warnings whatever NODE_ENV says. NODE_ENV is tried in child processes (the README's quick start as written),
 * so this process's environment is never changed.
 */

const ROOT = process.cwd();
const KEY = ecKey('prod-1');

/** Everything production mode asks for, on loopback http (development on this machine stays allowed). */
function complete(overrides: Partial<NetAuthOptions> = {}): NetAuthOptions {
  return {
    issuer: 'http://localhost:3000/apigateway',
    clients: CLIENTS,
    subscribers: SUBSCRIBERS,
    consentPolicy: POLICY,
    network: { mobileRanges: MOBILE_RANGES },
    signingKeys: [KEY],
    pairwiseSalt: 'a-long-random-secret-shared-by-every-instance',
    ...overrides,
  };
}

function startupError(options: NetAuthOptions): string {
  try {
    void createNetAuth(options).close();
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as TypeError).message;
  }
  throw new Error('createNetAuth started');
}

async function starts(options: NetAuthOptions): Promise<void> {
  await createNetAuth(options).close();
}

function warningsOf(options: NetAuthOptions): string[] {
  const options_: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '') options_.push((JSON.parse(line) as { option: string }).option);
      done();
    },
  });
  void createNetAuth({ ...options, logger: pino({ level: 'warn' }, stream) }).close();
  return options_;
}

describe("production mode (mode: 'production')", () => {
  const stores: RedisStore[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
  });

  it('a generated signing key is a start-up error naming signingKeys', async () => {
    const message = startupError(complete({ mode: 'production', signingKeys: undefined }));
    expect(message).toMatch(/^signingKeys: no signingKeys configured/);
    expect(message).toContain("Production mode (mode: 'production')");
    expect(message).toContain('configure signingKeys');
    // No key needed (no ID tokens, opaque access tokens): nothing to refuse.
    await starts(complete({ mode: 'production', signingKeys: undefined, idTokens: false }));
  });

  it('a random pairwiseSalt is a start-up error naming pairwiseSalt', () => {
    expect(startupError(complete({ mode: 'production', pairwiseSalt: undefined }))).toMatch(/^pairwiseSalt: /);
  });

  it('a per-process consentPage.cookieSecret with a shared store is a start-up error; one instance on memory is not', async () => {
    // Never opened nor used: only its type says "shared".
    const store = new RedisStore({ url: 'redis://127.0.0.1:1' });
    stores.push(store);
    expect(startupError(complete({ mode: 'production', store }))).toMatch(/^consentPage\.cookieSecret: /);
    await starts(
      complete({ mode: 'production', store, consentPage: { cookieSecret: 'a-secret-every-instance-shares' } }),
    );
    await starts(complete({ mode: 'production' }));
  });

  it('an http: issuer off this machine is a start-up error naming issuer', () => {
    const message = startupError(complete({ mode: 'production', issuer: 'http://gw.example.com/apigateway' }));
    expect(message).toMatch(/^issuer: the issuer is http: on gw\.example\.com/);
  });

  it('several at once: one error naming each, signingKeys first', () => {
    const message = startupError(
      complete({ mode: 'production', signingKeys: undefined, pairwiseSalt: undefined, issuer: 'http://gw.test/x' }),
    );
    expect(message.split('\n').map((line) => line.split(':')[0])).toEqual([
      'signingKeys',
      'pairwiseSalt',
      'issuer',
      'Production mode (mode',
    ]);
  });

  it("mode: 'development' keeps them warnings", () => {
    const store = new RedisStore({ url: 'redis://127.0.0.1:1' });
    stores.push(store);
    const options = complete({
      mode: 'development',
      signingKeys: undefined,
      pairwiseSalt: undefined,
      issuer: 'http://gw.example.com/apigateway',
      store,
    });
    expect(warningsOf(options)).toEqual(
      expect.arrayContaining(['signingKeys', 'pairwiseSalt', 'issuer', 'consentPage.cookieSecret']),
    );
  });

  it('an unknown mode is a start-up error', () => {
    expect(startupError(complete({ mode: 'prod' as NetAuthOptions['mode'] }))).toBe(
      "mode must be 'production' or 'development' (default: from NODE_ENV), not 'prod'",
    );
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The README's quick start (`<!-- example: gateway.ts -->`) as written, with `options` added to createNetAuth's
 * and NODE_ENV=production: its exit code and stderr when it fails to start, or its discovery status once it listens.
 */
async function quickStart(
  options: string,
): Promise<{ failed: true; stderr: string } | { failed: false; status: number }> {
  const example = allExamples(ROOT).find((e) => e.doc === 'README.md' && e.example === 'gateway.ts')!;
  const port = await freePort();
  const code = example.code
    .replace("from 'express-netauth'", "from '../lib/index.js'")
    .replace('createNetAuth({', `createNetAuth({ ${options}`)
    .replace('app.listen(3000);', "app.listen(3000, () => process.stdout.write('listening\\n'));")
    .replaceAll('3000', String(port));
  expect(code).toContain("process.stdout.write('listening");
  const dir = join(ROOT, 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `production-quick-start-${port}.mts`);
  writeFileSync(file, code);
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const listening = new Promise<void>((resolve) =>
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve()),
  );
  const first = await Promise.race([exited.then(() => 'exited' as const), listening.then(() => 'listening' as const)]);
  if (first === 'exited') return { failed: true, stderr };
  try {
    const res = await fetch(`http://localhost:${port}/apigateway/.well-known/openid-configuration`);
    return { failed: false, status: res.status };
  } finally {
    child.kill();
    await exited;
  }
}

describe("NODE_ENV=production (Express's convention) with the README's quick start", () => {
  it('as written: a start-up error naming signingKeys', async () => {
    const result = await quickStart('');
    expect(result.failed).toBe(true);
    const { stderr } = result as { stderr: string };
    expect(stderr).toContain('TypeError: signingKeys: no signingKeys configured');
    expect(stderr).toContain('Production mode (NODE_ENV=production)');
  }, 60_000);

  it('with signingKeys and pairwiseSalt given: it starts', async () => {
    const given = `signingKeys: [${JSON.stringify(KEY)}], pairwiseSalt: 'a-long-random-secret',`;
    expect(await quickStart(given)).toEqual({ failed: false, status: 200 });
  }, 60_000);

  it("with mode: 'development': it starts", async () => {
    expect(await quickStart("mode: 'development',")).toEqual({ failed: false, status: 200 });
  }, 60_000);
});
