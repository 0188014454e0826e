/**
 * The package as a user gets it: `npm pack`, then fresh projects outside the repository that install the
 * tarball and Express from the registry, compile the README's quick start (gateway.ts, app.ts) under
 * `strict` and run it: discovery (also RFC 8414 at the host root), the backend flow with fetch, and the
 * frontend flow through the application side with a cookie-keeping client.
 *
 *   esm       "type": "module", Express 5, with the optional peers the docs use (pino, redis); also compiles every
 *             TypeScript block of the docs against the tarball, and runs docs/camara.md's gateway
 *   cjs       "type": "commonjs", Express 5: require() of both entry points; optional peers absent
 *   express4  "type": "module", Express 4 and @types/express 4
 *
 * Run by .ci/run: `npx tsx .ci/package-check.ts`. Exits non-zero on the first failure.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Browser } from '../test/helpers/browser.js';
import { relativeLinks } from '../test/package/doc-links.js';
import { allExamples, moduleText } from '../test/package/docs-examples.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const work = mkdtempSync(join(tmpdir(), 'netauth-package-'));
const children = new Set<ChildProcess>();

function log(message: string): void {
  process.stdout.write(`package-check: ${message}\n`);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

function run(command: string, args: string[], cwd: string): string {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) failed:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

// ---- 1. The tarball ------------------------------------------------------------------------------------------

function pack(): string {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work], ROOT)) as {
    filename: string;
    files: { path: string }[];
  }[];
  check(info, 'npm pack printed nothing');
  const files = new Set(info.files.map((f) => f.path));
  for (const required of [
    'LICENSE',
    'README.md',
    'CHANGELOG.md',
    'package.json',
    'dist/lib/index.js',
    'dist/lib/index.d.ts',
    'dist/lib/client/index.js',
    'dist/lib/client/index.d.ts',
  ]) {
    check(files.has(required), `the tarball lacks ${required}`);
  }
  const stray = [...files].filter(
    (f) => (f.endsWith('.ts') && !f.endsWith('.d.ts')) || /^(test|demo-app|bench|lib)\//.test(f),
  );
  check(stray.length === 0, `the tarball ships sources or tests: ${stray.slice(0, 5).join(', ')}`);
  // A source map may ship only with what it points at (or with the sources inlined).
  const tarball = join(work, info.filename);
  for (const map of [...files].filter((f) => f.endsWith('.map'))) {
    const content = JSON.parse(run('tar', ['-xzOf', tarball, `package/${map}`], work)) as {
      sources: string[];
      sourcesContent?: unknown[];
    };
    for (const source of content.sources) {
      const path = join(dirname(map), source).replace(/\\/g, '/');
      check(
        content.sourcesContent !== undefined || files.has(path),
        `${map} points at ${source}, which the package does not contain`,
      );
    }
  }
  // The guides ship with the README, so its relative links work on npm: every relative link of a shipped page
  // names a shipped file (bench/ and test/ stay out: the pages link to them absolutely).
  const pages = [...files].filter((f) => f.endsWith('.md'));
  check(pages.includes('docs/gateway.md'), 'the tarball lacks docs/ (package.json "files")');
  for (const page of pages) {
    const text = run('tar', ['-xzOf', tarball, `package/${page}`], work);
    for (const target of relativeLinks(text)) {
      const path = target.split('#')[0]!;
      if (path === '') continue;
      const shipped = join(dirname(page), decodeURIComponent(path)).replace(/\\/g, '/');
      check(files.has(shipped), `${page} links to ${target}, which the package does not contain`);
    }
  }
  const manifest = JSON.parse(run('tar', ['-xzOf', tarball, 'package/package.json'], work)) as Record<string, unknown>;
  for (const field of ['repository', 'homepage', 'bugs', 'license', 'peerDependencies'])
    check(manifest[field], `package.json lacks ${field}`);
  // Type packages are the user's to install (README: TypeScript): none rides along into every install.
  const dependencies = Object.keys((manifest.dependencies ?? {}) as Record<string, string>);
  const typings = dependencies.filter((name) => name.startsWith('@types/'));
  check(typings.length === 0, `package.json has type packages in dependencies: ${typings.join(', ')}`);
  log(
    `${info.filename}: ${files.size} files, LICENSE, CHANGELOG.md, docs/ with every relative link inside the package, no TypeScript sources, no dangling source maps`,
  );
  return tarball;
}

// ---- 2. Fresh projects -----------------------------------------------------------------------------------------

interface Project {
  name: string;
  type: 'module' | 'commonjs';
  packages: string[];
}

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    esModuleInterop: true,
    skipLibCheck: true,
    types: ['node'],
    outDir: 'out',
  },
  files: ['gateway.ts', 'app.ts'],
};

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
    server.on('error', reject);
  });
}

function setUp(project: Project, tarball: string, ports: { gateway: number; app: number }): string {
  const dir = join(work, project.name);
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: `netauth-${project.name}`, private: true, type: project.type }, null, 2),
  );
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball, ...project.packages], dir);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  // The quick start as a reader copies it, on free ports instead of 3000 and 3001.
  for (const example of allExamples(ROOT).filter((e) => e.example !== undefined)) {
    const code = example.code.replaceAll('3001', String(ports.app)).replaceAll('3000', String(ports.gateway));
    writeFileSync(join(dir, example.example!), `${code}\n`);
  }
  run(process.execPath, [TSC, '-p', dir], dir);
  if (project.type === 'commonjs') {
    // The compiled quick start loads the package with require(), as a CommonJS application would.
    check(
      readFileSync(join(dir, 'out/gateway.js'), 'utf8').includes('require("express-netauth")'),
      'gateway.js does not require() the package',
    );
    check(
      readFileSync(join(dir, 'out/app.js'), 'utf8').includes('require("express-netauth/client")'),
      'app.js does not require() the client',
    );
  }
  return dir;
}

async function start(dir: string, file: string, port: number): Promise<void> {
  const child = spawn(process.execPath, [join(dir, 'out', file)], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // Up to 60 s: a cold first run (a fresh install, nothing in the OS cache) on a slowed host once took over 10.
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) break;
    try {
      await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${file} did not start listening on ${port}:\n${output}`);
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

/** What the README tells the reader to try, with fetch instead of curl and a browser. */
async function exercise(ports: { gateway: number; app: number }): Promise<void> {
  const gateway = `http://localhost:${ports.gateway}`;
  const issuer = `${gateway}/apigateway`;
  const oidc = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { issuer: string };
  check(oidc.issuer === issuer, `discovery: issuer ${oidc.issuer}`);
  const rfc8414 = await fetch(`${gateway}/.well-known/oauth-authorization-server/apigateway`);
  check(
    rfc8414.status === 200 && ((await rfc8414.json()) as { issuer: string }).issuer === issuer,
    `RFC 8414 metadata at the root: ${rfc8414.status}`,
  );

  const auth = { authorization: basic('my-app', 'my-app-secret') };
  const bc = await fetch(`${issuer}/bc-authorize`, {
    method: 'POST',
    headers: auth,
    body: new URLSearchParams({ login_hint: 'tel:+34600000001', scope: 'dpv:FraudPreventionAndDetection sim-swap' }),
  });
  const bcBody = (await bc.json()) as { auth_req_id?: string };
  check(bc.status === 200 && bcBody.auth_req_id, `bc-authorize: ${bc.status} ${JSON.stringify(bcBody)}`);
  const token = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: auth,
    body: new URLSearchParams({ grant_type: 'urn:openid:params:grant-type:ciba', auth_req_id: bcBody.auth_req_id }),
  });
  const tokenBody = (await token.json()) as { access_token?: string; scope?: string };
  check(token.status === 200 && tokenBody.access_token, `token: ${token.status} ${JSON.stringify(tokenBody)}`);
  const api = await fetch(`${gateway}/sim-swap/v1/check`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokenBody.access_token}` },
  });
  const apiBody = await api.text();
  check(
    api.status === 200 && apiBody === '{"swapped":false,"subscriber":"subscriber-1"}',
    `the guarded API: ${api.status} ${apiBody}`,
  );

  // The frontend flow: the app's start → the gateway's /authorize (loopback is the subscriber's line) → callback → result.
  const { res, url } = await new Browser().navigate(`http://localhost:${ports.app}/`);
  const result = await res.text();
  check(
    res.status === 200 && result === '{"swapped":false,"subscriber":"subscriber-1"}',
    `frontend flow ended at ${url.href}: ${res.status} ${result}`,
  );
}

/** The optional peers are absent in the cjs project: the features that need them say which package to install. */
function optionalPeers(dir: string): void {
  const script = `
    const assert = require('node:assert');
    const { createNetAuth, RedisStore } = require('express-netauth');
    const { createNetAuthClient } = require('express-netauth/client');
    assert.strictEqual(typeof createNetAuthClient, 'function');
    const netauth = createNetAuth({
      issuer: 'https://gw.example/apigateway',
      clients: [],
      subscribers: [],
      consentPolicy: [{ purpose: 'FraudPreventionAndDetection', scope: 'sim-swap', basis: 'legitimate-interest' }],
    });
    assert.throws(() => new RedisStore({ url: 'redis://127.0.0.1:1' }), /needs the package "redis".*npm install redis/);
    assert.throws(() => netauth.metricsRouter(), /needs the package "prom-client".*npm install prom-client/);
    netauth.close().then(() => console.log('ok'));
  `;
  check(run(process.execPath, ['-e', script], dir).trim() === 'ok', 'optional peers');
  log(
    'cjs: require() of both entry points; without redis and prom-client, RedisStore({ url }) and metricsRouter() name the package to install',
  );
}

/** The application side alone compiles with skipLibCheck off and none of the gateway's optional peers. */
function clientTypes(dir: string): void {
  writeFileSync(
    join(dir, 'tsconfig.client.json'),
    JSON.stringify(
      {
        ...TSCONFIG,
        compilerOptions: { ...TSCONFIG.compilerOptions, skipLibCheck: false, noEmit: true },
        files: ['app.ts'],
      },
      null,
      2,
    ),
  );
  run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.client.json')], dir);
  log('cjs: the application side type-checks with skipLibCheck off and no redis, prom-client or pino');
}

/**
 * The gateway alone compiles with skipLibCheck off without @types/express-session (an optional peer, for the
 * application side): none of the gateway's declarations reaches express-session's types.
 */
function gatewayTypesAlone(dir: string): void {
  run('npm', ['uninstall', '--no-audit', '--no-fund', '--loglevel=error', '@types/express-session'], dir);
  const compilerOptions = { ...TSCONFIG.compilerOptions, skipLibCheck: false, noEmit: true };
  const tsconfig = { ...TSCONFIG, compilerOptions, files: ['gateway.ts'] };
  writeFileSync(join(dir, 'tsconfig.gateway.json'), JSON.stringify(tsconfig, null, 2));
  run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.gateway.json')], dir);
  log('cjs: the gateway type-checks with skipLibCheck off and no @types/express-session');
}

/**
 * docs/camara.md's gateway under the preset (`<!-- example: camara-gateway.ts -->`, written by setUp on the gateway's
 * port, free again once the quick start has stopped) compiles against the tarball and runs with NODE_ENV=production.
 */
function camaraGateway(dir: string): void {
  const tsconfig = { ...TSCONFIG, files: ['camara-gateway.ts'] };
  writeFileSync(join(dir, 'tsconfig.camara.json'), JSON.stringify(tsconfig, null, 2));
  run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.camara.json')], dir);
  const output = execFileSync(process.execPath, [join(dir, 'out/camara-gateway.js')], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, NODE_ENV: 'production' },
    timeout: 60_000,
  });
  check(output.trim() === 'private_key_jwt 401 UNAUTHENTICATED', `camara-gateway.ts printed: ${output}`);
  log("esm: docs/camara.md's gateway under the preset compiles and runs with NODE_ENV=production");
}

/**
 * Every TypeScript block of README.md and docs/*.md against the tarball's types, but for the contributors' examples
 * (`<!-- inside: lib/… -->`): modules of the sources, which the tarball does not ship (docs-examples.test.ts compiles them).
 */
function docsAgainstTarball(dir: string): void {
  mkdirSync(join(dir, 'docs'));
  const files: string[] = [];
  allExamples(ROOT)
    .filter((example) => example.inside === undefined)
    .forEach((example) => {
      const file = `docs/${example.doc.replace(/\W/g, '_')}_${example.line}.ts`;
      writeFileSync(join(dir, file), moduleText(example));
      files.push(file);
    });
  writeFileSync(
    join(dir, 'docs/placeholders.d.ts'),
    readFileSync(join(ROOT, 'test/package/doc-placeholders.d.ts'), 'utf8'),
  );
  writeFileSync(
    join(dir, 'tsconfig.docs.json'),
    JSON.stringify(
      {
        ...TSCONFIG,
        compilerOptions: { ...TSCONFIG.compilerOptions, noEmit: true },
        files: ['docs/placeholders.d.ts', ...files],
      },
      null,
      2,
    ),
  );
  run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.docs.json')], dir);
  log(`esm: the ${files.length} TypeScript blocks of README.md and docs/*.md compile against the tarball`);
}

/** Each installs what the README's table names for what it uses: the app side with `@types/express-session`. */
const APP_SIDE = ['express-session', '@types/express-session', '@types/node@^20.19'];
const PROJECTS: Project[] = [
  { name: 'esm', type: 'module', packages: ['express@^5', '@types/express@^5', ...APP_SIDE, 'pino', 'redis'] },
  { name: 'cjs', type: 'commonjs', packages: ['express@^5', '@types/express@^5', ...APP_SIDE] },
  { name: 'express4', type: 'module', packages: ['express@^4.21.2', '@types/express@^4.17.21', ...APP_SIDE] },
];

async function main(): Promise<void> {
  const tarball = pack();
  for (const project of PROJECTS) {
    const ports = { gateway: await freePort(), app: await freePort() };
    const dir = setUp(project, tarball, ports);
    const express = (
      JSON.parse(readFileSync(join(dir, 'node_modules/express/package.json'), 'utf8')) as { version: string }
    ).version;
    await start(dir, 'gateway.js', ports.gateway);
    await start(dir, 'app.js', ports.app);
    await exercise(ports);
    for (const child of children) child.kill();
    children.clear();
    log(
      `${project.name} (${project.type}, Express ${express}): the README's quick start compiles under strict and runs: discovery, RFC 8414, backend flow, frontend flow`,
    );
    if (project.name === 'cjs') {
      optionalPeers(dir);
      clientTypes(dir);
      gatewayTypesAlone(dir);
    }
    if (project.name === 'esm') {
      docsAgainstTarball(dir);
      camaraGateway(dir);
    }
  }
}

main()
  .then(() => rmSync(work, { recursive: true, force: true }))
  .catch((error: unknown) => {
    for (const child of children) child.kill();
    process.stderr.write(
      `package-check: FAILED: ${error instanceof Error ? error.message : String(error)}\n(left in ${work})\n`,
    );
    process.exit(1);
  });
