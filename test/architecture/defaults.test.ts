import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RATE_LIMIT_COUNTER_DEFAULTS, RATE_LIMIT_DEFAULTS, REDIS_STORE_DEFAULTS } from '../../lib/defaults.js';

const OPERATIONS = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
const REDIS_STORE = readFileSync(new URL('../../docs/redis-store.md', import.meta.url), 'utf8');

/** Column `column` (0: the name) of a guide's table row for `name`. */
function documented(page: string, name: string, column = 2): string | undefined {
  const row = page.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
  return row?.split(' | ')[column]?.replace(/ \|$/, '');
}

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

  it('the rate limits’ Redis timeout', () => {
    expect(OPERATIONS).toContain(`| \`timeout\` | ${RATE_LIMIT_COUNTER_DEFAULTS.timeout} (ms) |`);
  });

  it('the Redis store’s url, prefix and timeout', () => {
    expect(documented(REDIS_STORE, 'url', 1)).toBe(`\`${REDIS_STORE_DEFAULTS.url}\``);
    expect(documented(REDIS_STORE, 'prefix', 1)).toBe(`\`${REDIS_STORE_DEFAULTS.prefix}\``);
    expect(documented(REDIS_STORE, 'timeout', 1)).toBe(`${REDIS_STORE_DEFAULTS.timeout}`);
  });
});
