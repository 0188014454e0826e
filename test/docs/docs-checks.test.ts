/**
 * What the docs say that a test can check (issue 35): the pages stay within their line limits; every option a docs
 * table or an option path in the prose names exists in the public types, and every option of the public option
 * types has the TSDoc the API reference is generated from, with the defaults of lib/defaults.ts; every `npm run`
 * command the docs name is a script, and runs in CI (.ci/run) unless the table below says why not.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ACCESS_TOKEN_FORMAT_DEFAULT,
  BODY_LIMIT_DEFAULT,
  CLIENT_AUTH_METHOD_DEFAULT,
  CLIENT_DEFAULTS,
  CONSENT_CONFIRMATION_DEFAULTS,
  CONSENT_LIFETIME_DEFAULT,
  CONSENT_PAGE_DEFAULTS,
  DISCOVERY_DEFAULTS,
  GUARD_DEFAULTS,
  MEMORY_STORE_DEFAULTS,
  METRICS_DEFAULTS,
  RATE_LIMIT_COUNTER_DEFAULTS,
  RATE_LIMIT_DEFAULTS,
  REDIS_STORE_DEFAULTS,
  CLIENT_JWKS_DEFAULTS,
  CLOCK_TOLERANCE_DEFAULT,
  ID_TOKENS_DEFAULT,
  LIFETIME_DEFAULTS,
} from '../../lib/defaults.js';
import { knownNames, publicProperties, type PublicProperty } from './public-types.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const GUIDES = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
const PAGES = ['README.md', 'bench/README.md', ...GUIDES];

const LIMITS: [string, number][] = [
  ['README.md', 350],
  ['bench/README.md', 300],
  ...GUIDES.map((guide): [string, number] => [guide, 400]),
];

/** Scripts the docs name that CI does not run, and why. */
const NOT_IN_CI: Record<string, string> = {
  demo: 'an interactive server; test/demo/ starts it and drives both flows',
  bench: 'about 20 minutes; CI runs bench:quick, the same harness',
  'bench:targets': 'about 15 minutes on a quiet machine; CI runs bench:quick, the same harness',
  format: 'rewrites files; CI runs lint, which fails on what format would change',
};

/**
 * The option names of a page's options tables: the backticked names (`issuer`, `lifetimes.code`) in the first
 * cell of each row of a table whose first header cell is Option, Field, Lifetime or Warning, or names `(options)`.
 */
function optionNames(markdown: string): string[] {
  const names: string[] = [];
  let row = 0; // of the current table: 1 is its header, 2 the delimiter row
  let options = false;
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    row = !fenced && line.startsWith('|') ? row + 1 : 0;
    const first = row === 0 ? '' : line.split('|')[1]!.trim();
    if (row === 1) options = /^(Option|Field|Lifetime|Warning)\b|\(options\)/.test(first);
    if (row > 2 && options)
      names.push(...[...first.matchAll(/`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)`/g)].map((m) => m[1]!));
  }
  return names;
}

/** `npm run <script>` and `npm test` as the docs write them (in code blocks and in backticks). */
function npmScripts(markdown: string): string[] {
  return [...markdown.matchAll(/\bnpm (?:run ([\w:-]+)|(test)\b)/g)].map((m) => m[1] ?? m[2]!);
}

describe('the docs', () => {
  it('stay within their line limits: README 350, each guide 400, bench/README.md 300', () => {
    const over = LIMITS.map(([file, limit]) => ({ file, limit, lines: read(file).split('\n').length - 1 })).filter(
      ({ lines, limit }) => lines > limit,
    );
    expect(over).toEqual([]);
    expect(GUIDES.length).toBeGreaterThanOrEqual(8);
  });

  describe('options', () => {
    const properties = publicProperties();
    const known = knownNames(properties);

    it('every option a docs table names exists in the public types', () => {
      const named = PAGES.flatMap((page) => optionNames(read(page)).map((name) => ({ page, name })));
      expect(named.length).toBeGreaterThan(100);
      expect(named.filter(({ name }) => !known.has(name))).toEqual([]);
      // The check can fail: a misspelt or removed option is no public name.
      const table = '| Option | Meaning |\n|---|---|\n| `pairwiseSlat` | … |\n| `lifetimes.codes` | … |\n';
      expect(optionNames(table).filter((name) => !known.has(name))).toEqual(['pairwiseSlat', 'lifetimes.codes']);
    }, 60_000);

    it('every option path the prose names (`lifetimes.code`, `consentPage.cookieSecret`) exists', () => {
      const top = (owner: string) =>
        properties.filter((p) => p.owner === owner && !p.path.includes('.')).map((p) => p.path);
      // `store.…` is the store's own API (`store.open()`); demo.md names the demo's configuration keys.
      const options = new Set([...top('NetAuthOptions'), ...top('NetAuthClientOptions')].filter((o) => o !== 'store'));
      const paths = PAGES.filter((page) => page !== 'docs/demo.md').flatMap((page) =>
        [
          ...read(page)
            .replace(/^```[\s\S]*?^```/gm, '')
            .matchAll(/`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`/g),
        ]
          .map((m) => m[1]!)
          .filter((path) => options.has(path.split('.')[0]!) && !/\.(ts|js|json|md)$/.test(path)),
      );
      expect(paths.length).toBeGreaterThan(30);
      expect(paths.filter((path) => !known.has(path))).toEqual([]);
      expect(known.has('consentPage.cookieSecrets')).toBe(false);
    });

    it('every field of the public option types has TSDoc (its entry in the API reference)', () => {
      const optionTypes = /Options$|^(RegisteredClient|StaticSubscriber|ConsentRule|Lifetimes)$|Rule$|Params$/;
      const undocumented = properties
        .filter((p) => optionTypes.test(p.owner) && p.doc === '')
        .filter((p) => !p.path.includes('.') || (p.inline && p.path.split('.').length === 2))
        .map((p) => `${p.owner}.${p.path}`);
      expect(undocumented).toEqual([]);
      expect(properties.filter((p) => p.owner === 'NetAuthOptions' && !p.path.includes('.')).length).toBeGreaterThan(
        20,
      );
    });

    it('the TSDoc gives the defaults of lib/defaults.ts, as `@defaultValue`', () => {
      const tag = (owner: string, path: string, name = 'defaultValue'): string =>
        properties.find((p: PublicProperty) => p.owner === owner && p.path === path)?.tags[name] ??
        `(no @${name} on ${owner}.${path})`;
      for (const [name, value] of Object.entries(LIFETIME_DEFAULTS))
        expect(tag('Lifetimes', name)).toMatch(new RegExp(`^${value}\\b`));
      for (const [name, value] of Object.entries(CONSENT_PAGE_DEFAULTS))
        expect(tag('ConsentPageOptions', name).replace(/^[`"']+|[`"']+$/g, '')).toBe(value);
      expect(tag('NetAuthOptions', 'bodyLimit')).toBe(`\`${BODY_LIMIT_DEFAULT}\``);
      expect(tag('NetAuthOptions', 'clockTolerance')).toBe(`${CLOCK_TOLERANCE_DEFAULT}`);
      expect(tag('NetAuthOptions', 'idTokens')).toBe(`${ID_TOKENS_DEFAULT}`);
      expect(tag('NetAuthOptions', 'accessTokenFormat')).toBe(`\`'${ACCESS_TOKEN_FORMAT_DEFAULT}'\``);
      for (const [name, value] of Object.entries(CLIENT_JWKS_DEFAULTS))
        expect(tag('ClientJwksOptions', name)).toBe(`${value}`);
      for (const [name, value] of Object.entries(GUARD_DEFAULTS))
        expect(tag('GuardOptions', name)).toMatch(`\`'${value}'\``);
      for (const name of ['url', 'prefix', 'timeout', 'replicaWait'] as const)
        expect(tag('RedisStoreOptions', name).replaceAll('`', '')).toBe(`${REDIS_STORE_DEFAULTS[name]}`);
      expect(tag('MemoryStoreOptions', 'sweepInterval')).toMatch(
        new RegExp(`^${MEMORY_STORE_DEFAULTS.sweepInterval}\\b`),
      );
      expect(tag('MetricsOptions', 'prefix')).toBe(`\`${METRICS_DEFAULTS.prefix}\``);
      expect(tag('MetricsOptions', 'clientIdLabel')).toBe(`${METRICS_DEFAULTS.clientIdLabel}`);
      expect(tag('MetricsOptions', 'buckets')).toBe(`\`[${METRICS_DEFAULTS.buckets.join(', ')}]\``);
      expect(tag('RateLimitOptions', 'timeout')).toBe(`${RATE_LIMIT_COUNTER_DEFAULTS.timeout}`);
      for (const [endpoint, rules] of Object.entries(RATE_LIMIT_DEFAULTS))
        for (const [name, rule] of Object.entries(
          rules as Record<string, { duration: number } & Record<string, number>>,
        )) {
          const own = properties.find((p) => p.owner === 'RateLimitOptions' && p.path === `${endpoint}.${name}`);
          const said = own?.tags.defaultValue ?? tag('RateLimitOptions', endpoint);
          expect(said, `${endpoint}.${name}`).toMatch(
            new RegExp(`(^|\\D)${rule.points ?? rule.failures} per ${rule.duration} s`),
          );
        }
      for (const name of ['codeLifetime', 'maxAttempts', 'sendTimeout'] as const)
        expect(tag('ConsentConfirmationOptions', name)).toBe(`${CONSENT_CONFIRMATION_DEFAULTS[name]}`);
      expect(tag('RegisteredClient', 'tokenEndpointAuthMethod')).toBe(`\`${CLIENT_AUTH_METHOD_DEFAULT}\``);
      expect(tag('ClientRegistry', 'authMethods')).toBe(`\`['${CLIENT_AUTH_METHOD_DEFAULT}']\``);
      expect(tag('ClientRegistry', 'grantTypes')).toBe(`\`['${DISCOVERY_DEFAULTS.grantTypes.join("', '")}']\``);
      expect(tag('ConsentRule', 'consentLifetime')).toMatch(new RegExp(`^${CONSENT_LIFETIME_DEFAULT}\\b`));
      expect(tag('NetAuthClientOptions', 'refreshBeforeExpiry')).toBe(`${CLIENT_DEFAULTS.refreshBeforeExpiry}`);
      expect(tag('NetAuthClientOptions', 'assertionAudience')).toBe(`\`'${CLIENT_DEFAULTS.assertionAudience}'\``);
    });

    it('a default stated in an option’s TSDoc is its `@defaultValue`, and the spec it follows its `@see`', () => {
      const own = (owner: string) => properties.filter((p) => p.owner === owner && !p.path.includes('.'));
      const owners = new Set(
        properties
          .map((p) => p.owner)
          .filter((o) => /Options$|^(Lifetimes|ConsentRule|RegisteredClient|ClientRegistry)$/.test(o)),
      );
      const typed = [...owners].flatMap(own);
      // A default said in prose (`Default 60.`) is one the API reference does not show as such.
      expect(typed.filter((p) => /(^|\. )Default\b/.test(p.doc)).map((p) => `${p.owner}.${p.path}`)).toEqual([]);
      expect(typed.filter((p) => p.tags.defaultValue !== undefined).length).toBeGreaterThan(30);
      // Every option that follows a spec's section says which: the RFC sections cited are links.
      const seen = typed.filter((p) => p.tags.see !== undefined);
      expect(seen.length).toBeGreaterThan(20);
      for (const p of seen) expect(p.tags.see, `${p.owner}.${p.path}`).toMatch(/^\{@link https:\/\/\S+ [^}]+\}/m);
    });
  });

  it('the README names the supported Node.js releases and the optional peer dependencies of package.json', () => {
    const manifest = JSON.parse(read('package.json')) as {
      engines: { node: string };
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const readme = read('README.md');
    const versions = readme.slice(readme.indexOf('## Supported versions'), readme.indexOf('## Implemented'));
    for (const range of manifest.engines.node.split(' || ')) expect(versions).toContain(`\`${range}\``);
    const install = readme.slice(readme.indexOf('## Install'), readme.indexOf('## Quick start'));
    const optional = Object.entries(manifest.peerDependenciesMeta).filter(([, meta]) => meta.optional);
    for (const [name] of optional) expect(install).toContain(`\`${name}\``);
  });

  describe('commands', () => {
    const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
    const ci = read('.ci/run');
    const named = [...new Set(PAGES.flatMap((page) => npmScripts(read(page))))];

    it('every npm command the docs name is a script of package.json', () => {
      expect(named).toEqual(expect.arrayContaining(['test', 'demo', 'lint', 'docs', 'bench']));
      expect(named.filter((script) => !scripts.includes(script))).toEqual([]);
    });

    it('runs in CI (.ci/run), unless NOT_IN_CI says why not', () => {
      const runs = (script: string) =>
        new RegExp(`^[^#\\n]*\\bnpm ${script === 'test' ? 'test' : `run ${script}`}\\b`, 'm').test(ci);
      expect(named.filter((script) => !runs(script) && !(script in NOT_IN_CI))).toEqual([]);
      // What the README says CI runs, it runs.
      const readme = read('README.md');
      const start = readme.indexOf('`bash .ci/run` is what CI runs');
      const said = start < 0 ? '' : readme.slice(start).split('\n\n')[0]!;
      expect(npmScripts(said).length).toBeGreaterThanOrEqual(2);
      expect(npmScripts(said).filter((script) => !runs(script))).toEqual([]);
    });
  });
});
