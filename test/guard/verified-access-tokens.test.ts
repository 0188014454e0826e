import { describe, expect, it } from 'vitest';
import type { VerifiedAccessToken } from '../../lib/gateway/tokens/jwt-access-tokens.js';
import { VerifiedAccessTokens } from '../../lib/guard/verified-access-tokens.js';

const NOW = 1_800_000_000_000;

function verifiedToken(expiresAt: number): VerifiedAccessToken {
  return {
    jti: 'j',
    clientId: 'app-1',
    subscriberId: 'sub-1',
    singleUse: false,
    purpose: 'dpv:FraudPreventionAndDetection',
    scopes: ['sim-swap'],
    scope: 'dpv:FraudPreventionAndDetection#sim-swap',
    grantIds: ['g'],
    issuedAt: NOW,
    expiresAt,
    jkt: undefined,
    identifiedBy: 'network',
    authorizedAt: NOW,
  };
}

describe('verified JWT access tokens', () => {
  it('verify a token once, then answer from memory until its exp (whole seconds), then never', () => {
    let now = NOW;
    const kept = new VerifiedAccessTokens(() => now);
    let verifications = 0;
    const verify = () => {
      verifications++;
      return verifiedToken(NOW + 60_000);
    };
    expect(kept.find('t', verify)?.clientId).toBe('app-1');
    expect(kept.find('t', verify)?.clientId).toBe('app-1');
    expect(verifications).toBe(1);
    now = NOW + 59_999;
    expect(kept.find('t', verify)).toBeDefined();
    now = NOW + 60_000;
    expect(kept.find('t', () => undefined)).toBeUndefined();
  });

  it('keep nothing that did not verify: a made-up token is verified (and refused) every time', () => {
    const kept = new VerifiedAccessTokens(() => NOW);
    let verifications = 0;
    for (let i = 0; i < 3; i++) {
      expect(
        kept.find('forged', () => {
          verifications++;
          return undefined;
        }),
      ).toBeUndefined();
    }
    expect(verifications).toBe(3);
  });

  it('tell apart tokens that end alike: only the exact text is answered from memory', () => {
    const kept = new VerifiedAccessTokens(() => NOW);
    const tail = 's'.repeat(43);
    const first = kept.find(`a.b.${tail}`, () => ({ ...verifiedToken(NOW + 60_000), clientId: 'app-1' }));
    expect(first?.clientId).toBe('app-1');
    let verifications = 0;
    const other = kept.find(`c.d.${tail}`, () => {
      verifications++;
      return { ...verifiedToken(NOW + 60_000), clientId: 'app-2' };
    });
    expect(other?.clientId).toBe('app-2');
    expect(verifications).toBe(1);
    expect(kept.find(`x.y.${tail}`, () => undefined)).toBeUndefined();
  });

  it('hold at most their limit, the oldest going first', () => {
    const kept = new VerifiedAccessTokens(() => NOW, 2);
    const seen: string[] = [];
    const verify = (token: string) => {
      seen.push(token);
      return verifiedToken(NOW + 60_000);
    };
    for (const token of ['a', 'b', 'c', 'b', 'a']) kept.find(token, verify);
    expect(seen).toEqual(['a', 'b', 'c', 'a']);
  });

  it('hand out frozen grants, so one service API cannot change what the next call sees', () => {
    const kept = new VerifiedAccessTokens(() => NOW);
    const found = kept.find('t', () => verifiedToken(NOW + 60_000))!;
    expect(Object.isFrozen(found)).toBe(true);
    expect(() => (found.scopes as string[]).push('x')).toThrow(TypeError);
  });
});
