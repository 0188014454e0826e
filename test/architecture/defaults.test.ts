import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ACCESS_TOKEN_FORMAT_DEFAULT,
  CLIENT_AUTH_METHOD_DEFAULT,
  CLIENT_DEFAULTS,
  CONSENT_PAGE_DEFAULTS,
  GUARD_DEFAULTS,
  ID_TOKENS_DEFAULT,
  LIFETIME_DEFAULTS,
  METRICS_DEFAULTS,
  RATE_LIMIT_COUNTER_DEFAULTS,
  RATE_LIMIT_DEFAULTS,
  REDIS_STORE_DEFAULTS,
} from '../../lib/defaults.js';
import { CIBA_GRANT } from '../../lib/registry/clients.js';
import { publicProperties } from '../docs/public-types.js';

const page = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
const OPERATIONS = page('operations.md');
const REDIS_STORE = page('redis-store.md');
const GATEWAY = page('gateway.md');
const FRONTEND_FLOW = page('frontend-flow.md');
const STANDARDS = page('standards.md');
const CLIENT = page('client.md');

/** Column `column` (0: the name) of a guide's table row for `name`. */
function documented(page: string, name: string, column = 2): string | undefined {
  const row = page.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
  return row?.split(' | ')[column]?.replace(/ \|$/, '');
}

/** The rows (cells, trimmed) of the first table after `heading`, header and delimiter left out. */
function table(page: string, heading: string): string[][] {
  const start = page.indexOf(heading);
  if (start < 0) throw new Error(`no ${heading}`);
  const lines = page.slice(start).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const end = lines.findIndex((line, i) => i > first && !line.startsWith('|'));
  return lines.slice(first + 2, end).map((line) =>
    line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim()),
  );
}

/** The backticked option names of a table's first column (a cell may name several: `realm`, `bodyLimit`, `now`). */
const names = (rows: string[][]) =>
  rows.flatMap(([first]) => [...first!.matchAll(/`(\w+(?:\.\w+)*)`/g)].map((m) => m[1]!));

/** The options table of a type: every top-level property, as the compiler sees the public types. */
const properties = publicProperties();
const optionsOf = (owner: string) =>
  properties.filter((p) => p.owner === owner && !p.path.includes('.')).map((p) => p.path);

/**
 * The guides' defaults are lib/defaults.ts's. (The options' own defaults are in their TSDoc, the API reference:
 * test/docs/docs-checks.test.ts checks those.)
 */
describe('lib/defaults.ts is what the guides say', () => {
  it('every rate limit rule of docs/operations.md', () => {
    for (const [endpoint, rules] of Object.entries(RATE_LIMIT_DEFAULTS)) {
      for (const [name, rule] of Object.entries(
        rules as Record<string, { duration: number } & Record<string, number>>,
      )) {
        const count = rule.points ?? rule.failures;
        expect(documented(OPERATIONS, `${endpoint}.${name}`)).toBe(`${count} per ${rule.duration} s`);
      }
    }
  });

  it('the rate limits’ Redis timeout and key prefix', () => {
    expect(OPERATIONS).toContain(`| \`timeout\` | ${RATE_LIMIT_COUNTER_DEFAULTS.timeout} (ms) |`);
    expect(documented(OPERATIONS, 'keyPrefix', 1)).toContain(`\`${RATE_LIMIT_COUNTER_DEFAULTS.keyPrefixSuffix}\``);
  });

  it('the Redis store’s url, prefix, timeout and replicaWait', () => {
    expect(documented(REDIS_STORE, 'url', 1)).toBe(`\`${REDIS_STORE_DEFAULTS.url}\``);
    expect(documented(REDIS_STORE, 'prefix', 1)).toBe(`\`${REDIS_STORE_DEFAULTS.prefix}\``);
    expect(documented(REDIS_STORE, 'timeout', 1)).toBe(`${REDIS_STORE_DEFAULTS.timeout}`);
    expect(documented(REDIS_STORE, 'replicaWait', 1)).toBe(`${REDIS_STORE_DEFAULTS.replicaWait}`);
  });

  it('the consent page’s defaults and lifetimes (docs/frontend-flow.md)', () => {
    const rows = new Map(table(FRONTEND_FLOW, '### Theming and cookie options').map(([name, , d]) => [name, d]));
    for (const [name, value] of Object.entries(CONSENT_PAGE_DEFAULTS))
      expect(rows.get(`\`${name}\``)?.replace(/^["'`]+|["'`]+$/g, ''), name).toBe(value);
    for (const [name, d] of table(FRONTEND_FLOW, '| Lifetime | Default |'))
      expect(d).toBe(`${LIFETIME_DEFAULTS[name!.slice('`lifetimes.'.length, -1) as keyof typeof LIFETIME_DEFAULTS]} s`);
  });

  it('the token options and the guard’s defaults (docs/standards.md)', () => {
    expect(documented(STANDARDS, 'idTokens')).toBe(`\`${ID_TOKENS_DEFAULT}\``);
    expect(documented(STANDARDS, 'accessTokenFormat')).toBe(`\`'${ACCESS_TOKEN_FORMAT_DEFAULT}'\``);
    expect(STANDARDS).toContain(`\`revocation: 'local' | 'store'\` (default \`'${GUARD_DEFAULTS.revocation}'\`)`);
    expect(STANDARDS).toMatch(
      new RegExp(`\`subscriber:\\s+'required' \\| 'optional'\` \\(default \`'${GUARD_DEFAULTS.subscriber}'\`\\)`),
    );
  });

  it('the metrics’ prefix, client id label and buckets (docs/operations.md)', () => {
    expect(OPERATIONS).toContain(`\`prefix\` (default \`${METRICS_DEFAULTS.prefix}\`)`);
    expect(OPERATIONS).toContain(`\`clientIdLabel\` (default \`${METRICS_DEFAULTS.clientIdLabel}\`)`);
    expect(OPERATIONS).toContain(`\`buckets\` (seconds, default \`[${METRICS_DEFAULTS.buckets.join(', ')}]\`)`);
  });

  it('the client’s defaults (docs/client.md)', () => {
    expect(documented(CLIENT, 'refreshBeforeExpiry', 1)).toBe(`${CLIENT_DEFAULTS.refreshBeforeExpiry} (s)`);
    expect(documented(CLIENT, 'assertionAudience', 1)).toBe(`\`'${CLIENT_DEFAULTS.assertionAudience}'\``);
  });

  it('a client’s default authentication method (docs/gateway.md)', () => {
    expect(documented(GATEWAY, 'tokenEndpointAuthMethod', 1)).toContain(`\`'${CLIENT_AUTH_METHOD_DEFAULT}'\` (default`);
    expect(CIBA_GRANT).toBe('urn:openid:params:grant-type:ciba'); // DISCOVERY_DEFAULTS spells it out
  });
});

/** A guide's options table names every option of its type and nothing else: an option added or removed shows. */
describe('the guides’ options tables are the types’ options', () => {
  const cases: [string, string, string, string[]][] = [
    ['docs/gateway.md', '## Options', 'NetAuthOptions', []],
    ['docs/frontend-flow.md', '### Theming and cookie options', 'ConsentPageOptions', []],
    ['docs/redis-store.md', '| Option | Default | |', 'RedisStoreOptions', []],
    ['docs/gateway.md', '`GuardOptions` in the', 'GuardOptions', []],
    ['docs/client.md', 'Every option, its type and default', 'NetAuthClientOptions', []],
    [
      'docs/operations.md',
      '| Option | Counts | Default |',
      'RateLimitOptions',
      // The counters' own options, in the table below the rules ('Option | Default').
      ['backend', 'redis', 'keyPrefix', 'timeout'],
    ],
  ];
  for (const [file, heading, owner, elsewhere] of cases) {
    it(`${file}: ${owner}`, () => {
      const listed = new Set(names(table(page(file.slice('docs/'.length)), heading)).map((n) => n.split('.')[0]!));
      const options = optionsOf(owner);
      expect(options.length).toBeGreaterThan(3);
      expect(options.filter((o) => !listed.has(o) && !elsewhere.includes(o))).toEqual([]);
      expect([...listed].filter((n) => !options.includes(n))).toEqual([]);
    });
  }

  it('the rate limits’ counter options are in the table below the rules', () => {
    const listed = names(table(OPERATIONS, '| Option | Default |'));
    expect(listed).toEqual(['backend', 'redis', 'keyPrefix', 'timeout']);
  });

  it('the check can fail: a table missing an option, or naming one the type lacks', () => {
    const rows = table('## X\n\n| Option | Meaning |\n|---|---|\n| `scope` | … |\n| `purposes` | … |\n', '## X');
    const options = optionsOf('GuardOptions');
    expect(options.filter((o) => !names(rows).includes(o))).toContain('purpose');
    expect(names(rows).filter((n) => !options.includes(n))).toEqual(['purposes']);
  });
});

/**
 * An option read with a literal fall-back (`options.timeout ?? 2000`) outside lib/defaults.ts is a default with a
 * second home. Found by the shape of the read: an options-like object's field, `??`, a literal.
 */
describe('every default once, in lib/defaults.ts', () => {
  const OPTION_READ =
    /\b(?:options|opts|o|l|input|rule)\??\.\w+\s*\?\?\s*(?:-?\d|'|"|true\b|false\b|\[\s*(?!\.\.\.)[^\]\s])/;
  /** Literal fall-backs that are not an option's default, and why. */
  const NOT_OPTION_DEFAULTS: Record<string, string> = {
    'lib/netauth.ts': "`withdrawnBy` of one consent.withdraw() call (the operator's API), not a gateway option",
    'lib/consent/number-verification.ts':
      "CAMARA Number Verification's rules require network authentication unless the rule says otherwise (the spec's, per rule)",
  };
  const sources = (dir: string): string[] =>
    readdirSync(new URL(`../../${dir}`, import.meta.url), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? sources(`${dir}/${entry.name}`)
        : entry.name.endsWith('.ts')
          ? [`${dir}/${entry.name}`]
          : [],
    );
  const reads = (file: string, text: string) =>
    text
      .split('\n')
      .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
      .filter(({ line }) => OPTION_READ.test(line) && !line.trim().startsWith('*'))
      .map(({ at }) => at);

  it('no option is read with a literal fall-back outside lib/defaults.ts', () => {
    const found = sources('lib')
      .filter((file) => file !== 'lib/defaults.ts' && !(file in NOT_OPTION_DEFAULTS))
      .flatMap((file) => reads(file, readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')));
    expect(found).toEqual([]);
    for (const file of Object.keys(NOT_OPTION_DEFAULTS))
      expect(reads(file, readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')).length, file).toBe(1);
  });

  it('the check can fail: a default restated where it is read', () => {
    const code =
      "const timeout = options.timeout ?? 2000;\nconst d = options.prefix ?? REDIS_STORE_DEFAULTS.prefix;\nconst c = o.cookieName ?? 'netauth.sid';";
    expect(reads('lib/x.ts', code)).toEqual(['lib/x.ts:1', 'lib/x.ts:3']);
  });
});
