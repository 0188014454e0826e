import { describe, expect, it } from 'vitest';
import { parseLoginHint, normaliseIp } from '../../lib/identity/login-hint.js';
import type { OAuthError } from '../../lib/errors.js';

function code(value: string): string | undefined {
  try {
    parseLoginHint(value);
    return undefined;
  } catch (error) {
    return (error as OAuthError).code;
  }
}

describe('login_hint', () => {
  it('reads tel: as an E.164 phone number', () => {
    expect(parseLoginHint('tel:+34600000001')).toEqual({ type: 'tel', phoneNumber: '+34600000001' });
    expect(parseLoginHint('tel:+12345')).toEqual({ type: 'tel', phoneNumber: '+12345' });
    expect(parseLoginHint('tel:+123456789012345')).toEqual({ type: 'tel', phoneNumber: '+123456789012345' });
  });

  it('reads the four ipport shapes', () => {
    expect(parseLoginHint('ipport:10.20.0.1')).toEqual({ type: 'ipport', address: { ip: '10.20.0.1' } });
    expect(parseLoginHint('ipport:10.20.0.1:8080')).toEqual({
      type: 'ipport',
      address: { ip: '10.20.0.1', port: 8080 },
    });
    expect(parseLoginHint('ipport:[2001:db8::1]')).toEqual({ type: 'ipport', address: { ip: '2001:db8::1' } });
    expect(parseLoginHint('ipport:[2001:db8::1]:443')).toEqual({
      type: 'ipport',
      address: { ip: '2001:db8::1', port: 443 },
    });
  });

  it('normalises IPv6 and IPv4-mapped forms', () => {
    expect(parseLoginHint('ipport:[2001:0DB8:0000:0000:0000:0000:0000:0001]:1')).toEqual({
      type: 'ipport',
      address: { ip: '2001:db8::1', port: 1 },
    });
    expect(parseLoginHint('ipport:[::ffff:10.20.0.1]')).toEqual({ type: 'ipport', address: { ip: '10.20.0.1' } });
    expect(normaliseIp('::ffff:0a14:0001')).toBe('10.20.0.1');
    expect(parseLoginHint('ipport:10.20.0.1:65535')).toEqual({
      type: 'ipport',
      address: { ip: '10.20.0.1', port: 65535 },
    });
  });

  // Regression (found by test/properties/login-hint.test.ts): ipaddr.js reads `::a.b.c.d` as IPv4-mapped, so
  // `[::0.0.0.0]` was 0.0.0.0 while `[::]`, the same address, was `::`.
  it('the IPv4-compatible form ::a.b.c.d is the IPv6 address it spells, not the IPv4 address', () => {
    expect(parseLoginHint('ipport:[::10.20.0.1]')).toEqual({ type: 'ipport', address: { ip: '::a14:1' } });
    expect(parseLoginHint('ipport:[::0.0.0.0]')).toEqual(parseLoginHint('ipport:[::]'));
    expect(normaliseIp('0:0:0:0:0:0:10.20.0.1')).toBe(normaliseIp('::a14:1'));
    expect(normaliseIp('64:ff9b::192.0.2.33')).toBe('64:ff9b::c000:221');
  });

  it.each([
    ['tel:34600000001', 'tel without +'],
    ['tel:+34 600 000 001', 'visual separators'],
    ['tel:+34-600-000-001', 'dashes'],
    ['tel:+0123456', 'leading zero country code'],
    ['tel:+1234', 'too short'],
    ['tel:+1234567890123456', 'too long'],
    ['tel:', 'empty identifier'],
    ['+34600000001', 'no prefix'],
    ['34600000001', 'no prefix, no plus'],
    ['ipport:10.20.0', 'short IPv4'],
    ['ipport:10.20.0.256', 'octet out of range'],
    ['ipport:010.20.0.1', 'octal-looking octet'],
    ['ipport:0x0a.20.0.1', 'hex octet'],
    ['ipport:2001:db8::1', 'IPv6 without brackets'],
    ['ipport:[2001:db8::1', 'unclosed bracket'],
    ['ipport:[2001:db8::1]x', 'junk after bracket'],
    ['ipport:[10.20.0.1]', 'IPv4 in brackets'],
    ['ipport:10.20.0.1:0', 'port 0'],
    ['ipport:10.20.0.1:65536', 'port too large'],
    ['ipport:10.20.0.1:', 'empty port'],
    ['ipport:10.20.0.1:80a', 'non-numeric port'],
    ['ipport:[fe80::1%eth0]', 'zone id'],
    ['ipport:[::ffff:0x0a.20.0.1]', 'hex octet in an IPv4-mapped address'],
    ['ipport:[::ffff:010.20.0.1]', 'octal-looking octet in an IPv4-mapped address'],
    ['ipport:', 'empty identifier'],
    [':+34600000001', 'empty type'],
    ['te l:+34600000001', 'space in type'],
  ])('%s (%s) is invalid_request', (value) => {
    expect(code(value)).toBe('invalid_request');
  });

  it('a well-formed hint of a type not served is unknown_user_id', () => {
    expect(code('msisdn:34600000001')).toBe('unknown_user_id');
    expect(code('imsi:214010000000001')).toBe('unknown_user_id');
  });

  it('operatortoken: (GSMA TS.43) is parsed; the token is opaque', () => {
    expect(parseLoginHint('operatortoken:abc123')).toEqual({ type: 'operatortoken', token: 'abc123' });
    expect(parseLoginHint('OperatorToken:a:b/c=')).toEqual({ type: 'operatortoken', token: 'a:b/c=' });
    expect(code('operatortoken:')).toBe('invalid_request');
  });
});
