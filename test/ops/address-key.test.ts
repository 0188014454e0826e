import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { addressKey } from '../../lib/ops/rate-limits.js';

/**
 * The key an address is counted under (per-address limits, the client-authentication lock-out). Canonical IPv4
 * addresses skip ipaddr.js's parser (issue 18: the parse was most of the lock-out's cost): the key must be the
 * one the parser gives.
 */
describe('addressKey', () => {
  it('gives a canonical IPv4 address the key ipaddr.js gives it', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(addressKey(ip)).toBe(ipaddr.parse(ip).toString());
      }),
      { numRuns: 500 },
    );
  });

  it('still parses every other form: IPv4-mapped IPv6 as IPv4, IPv6 by its /64, others normalised', () => {
    expect(addressKey('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(addressKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:ffff::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('010.1.1.1')).toBe(ipaddr.parse('010.1.1.1').toString());
    expect(addressKey(undefined)).toBe('unknown');
    expect(addressKey('not an address')).toBe('not an address');
  });
});
