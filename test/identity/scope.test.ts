import { describe, expect, it } from 'vitest';
import { parseScope, withoutProtocolScopes } from '../../lib/identity/scope.js';
import type { OAuthError } from '../../lib/errors.js';
import { countWork } from '../helpers/work.js';

function code(value: string): string | undefined {
  try {
    parseScope(value);
    return undefined;
  } catch (error) {
    return (error as OAuthError).code;
  }
}

describe('scope', () => {
  it('reads dpv:<purpose>#<scope>', () => {
    expect(parseScope('dpv:FraudPreventionAndDetection#sim-swap')).toEqual({
      purpose: 'FraudPreventionAndDetection',
      scopes: ['sim-swap'],
      openid: false,
      offlineAccess: false,
      value: 'dpv:FraudPreventionAndDetection#sim-swap',
    });
  });

  it('reads the CAMARA form: dpv:<purpose> plus bare API scopes, with openid', () => {
    expect(parseScope('openid dpv:FraudPreventionAndDetection sim-swap:check sim-swap:retrieve-date')).toEqual({
      purpose: 'FraudPreventionAndDetection',
      scopes: ['sim-swap:check', 'sim-swap:retrieve-date'],
      openid: true,
      offlineAccess: false,
      value: 'openid dpv:FraudPreventionAndDetection sim-swap:check sim-swap:retrieve-date',
    });
  });

  it('reads offline_access as a protocol scope beside the purpose, like openid', () => {
    const parsed = parseScope('dpv:FraudPreventionAndDetection sim-swap offline_access openid');
    expect(parsed).toMatchObject({
      purpose: 'FraudPreventionAndDetection',
      scopes: ['sim-swap'],
      openid: true,
      offlineAccess: true,
    });
    expect(parsed.value).toBe('dpv:FraudPreventionAndDetection sim-swap offline_access openid');
    expect(withoutProtocolScopes(parsed, { offlineAccess: true })).toEqual({
      ...parsed,
      offlineAccess: false,
      value: 'dpv:FraudPreventionAndDetection sim-swap openid',
    });
    expect(withoutProtocolScopes(parsed, { openid: true, offlineAccess: true }).value).toBe(
      'dpv:FraudPreventionAndDetection sim-swap',
    );
    expect(code('offline_access')).toBe('invalid_scope');
  });

  it('accepts openid with the single-token form and ignores repeated tokens', () => {
    const parsed = parseScope(
      'dpv:FraudPreventionAndDetection#sim-swap openid dpv:FraudPreventionAndDetection#sim-swap',
    );
    expect(parsed.openid).toBe(true);
    expect(parsed.scopes).toEqual(['sim-swap']);
    expect(parsed.value).toBe('dpv:FraudPreventionAndDetection#sim-swap openid');
  });

  it.each([
    ['dpv:FraudPreventionAndDetection#sim-swap dpv:Marketing#sim-swap', 'two purposes'],
    ['sim-swap', 'no purpose'],
    ['openid', 'only openid'],
    ['dpv:FraudPreventionAndDetection', 'a purpose and no API scope'],
    ['dpv:#sim-swap', 'empty purpose'],
    ['dpv:Fraud-Prevention#sim-swap', 'purpose not a DPV name'],
    ['dpv:FraudPreventionAndDetection#', 'empty scope after #'],
    ['dpv:FraudPreventionAndDetection#sim"swap', 'a quote'],
    ['dpv:FraudPreventionAndDetection#sím-swap', 'non-ASCII'],
  ])('%s (%s) is invalid_scope', (value) => {
    expect(code(value)).toBe('invalid_scope');
  });

  it('an empty scope is invalid_request (required parameter missing)', () => {
    expect(code('   ')).toBe('invalid_request');
  });

  it('parses in work linear in the number of tokens (counted, not timed): a 16 KB scope costs what its size says', () => {
    // Distinct API scopes after one purpose: the echoed scope string keeps each once, in order.
    const scope = (n: number) =>
      ['dpv:FraudPreventionAndDetection', ...Array.from({ length: n }, (_, i) => `s${i}`)].join(' ');
    expect(parseScope(scope(3)).value).toBe('dpv:FraudPreventionAndDetection s0 s1 s2');
    expect(scope(3000).length).toBeGreaterThan(16 * 1024);
    const small = countWork(() => parseScope(scope(1500)));
    const large = countWork(() => parseScope(scope(3000)));
    expect(small).toBeGreaterThan(0);
    // Linear: twice the tokens, about twice the work. (A search of the echoed tokens per token made it 4x.)
    expect(large / small).toBeLessThan(2.3);
    // Repeats of one token, likewise.
    const repeated = (n: number) =>
      countWork(() => parseScope(`dpv:FraudPreventionAndDetection ${'sim-swap '.repeat(n)}`));
    expect(repeated(3000) / repeated(1500)).toBeLessThan(2.3);
  });
});
