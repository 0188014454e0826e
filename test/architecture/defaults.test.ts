import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  BODY_LIMIT_DEFAULT,
  CLIENT_JWKS_DEFAULTS,
  LIFETIME_DEFAULTS,
  RATE_LIMIT_COUNTER_DEFAULTS,
} from '../../lib/defaults.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const OPERATIONS = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');

/** The Default column of the options reference's row for `option`. */
function documented(option: string): string | undefined {
  const row = README.split('\n').find((line) => line.startsWith(`| \`${option}\` |`));
  return row?.split(' | ')[2];
}

describe('lib/defaults.ts is what the options reference says', () => {
  it('lifetimes', () => {
    for (const [name, value] of Object.entries(LIFETIME_DEFAULTS)) {
      expect(documented(`lifetimes.${name}`)).toBe(`\`${value}\``);
    }
  });

  it('bodyLimit and clientJwks', () => {
    expect(documented('bodyLimit')).toBe(`\`'${BODY_LIMIT_DEFAULT}'\``);
    const { fetchTimeout, maxBytes, cacheMaxAge } = CLIENT_JWKS_DEFAULTS;
    expect(documented('clientJwks')).toBe(`\`${fetchTimeout}\` ms, ${maxBytes / 1024} KiB, ${cacheMaxAge} s, none`);
  });

  it('the rate limits’ Redis timeout', () => {
    expect(OPERATIONS).toContain(`| \`timeout\` | ${RATE_LIMIT_COUNTER_DEFAULTS.timeout} (ms) |`);
  });
});
