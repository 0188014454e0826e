import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseLoginHint, normaliseIp } from '../../lib/identity/login-hint.js';
import { OAuthError } from '../../lib/index.js';

/**
 * login_hint (docs/protocol.md): values generated from their grammar parse to exactly what they say; near
 * misses are invalid_request; types not served are unknown_user_id; anything else never throws anything
 * but those two OAuth errors. IPv6 is normalised to RFC 5952, IPv4-mapped IPv6 to IPv4, whatever the form.
 */

const RUNS = 300;

function codeOf(value: string): string {
  try {
    parseLoginHint(value);
    return 'ok';
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    return error.code;
  }
}

const digit = fc.integer({ min: 0, max: 9 }).map(String);
const digits = (min: number, max: number) => fc.array(digit, { minLength: min, maxLength: max }).map((d) => d.join(''));
/** `+<E.164>`: a leading non-zero digit, then 4..14 more. */
const e164 = fc.tuple(fc.integer({ min: 1, max: 9 }), digits(4, 14)).map(([first, rest]) => `+${first}${rest}`);
const telPrefix = fc.constantFrom('tel', 'TEL', 'Tel', 'tEl');
const ipportPrefix = fc.constantFrom('ipport', 'IPPORT', 'IpPort');
const port = fc.integer({ min: 1, max: 65535 });

const octet = fc.integer({ min: 0, max: 255 });
const ipv4Octets = fc.tuple(octet, octet, octet, octet);
const group = fc.integer({ min: 0, max: 0xffff });
const ipv6Groups = fc.array(group, { minLength: 8, maxLength: 8 });

/** RFC 5952, written independently of ipaddr.js: lowercase, no leading zeros, the longest run (≥ 2) of zero groups as `::`, the first on a tie. */
function rfc5952(groups: readonly number[]): string {
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length) best = { start: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.length < 2) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
}

/** The address the groups mean, as docs/protocol.md wants it: IPv4-mapped (::ffff:0:0/96) is the IPv4 address. */
function expected(groups: readonly number[]): string {
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  return rfc5952(groups);
}

/** The same IPv6 address written in the forms RFC 4291 §2.2 allows (and case and leading zeros vary). */
const ipv6Text = (groups: readonly number[]): fc.Arbitrary<string> =>
  fc
    .record({
      pad: fc.boolean(),
      upper: fc.boolean(),
      compress: fc.nat({ max: 8 }),
      dotted: fc.boolean(),
    })
    .map(({ pad, upper, compress, dotted }) => {
      let parts = groups.map((g) => (pad ? g.toString(16).padStart(4, '0') : g.toString(16)));
      if (upper) parts = parts.map((p) => p.toUpperCase());
      let tail: string[] = [];
      if (dotted) {
        // Low 32 bits in dotted decimal: x:x:x:x:x:x:d.d.d.d
        tail = [[groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.')];
        parts = parts.slice(0, 6);
      }
      // Compress one run of zero groups (any run, not only the longest: every form is valid input).
      const runs: [number, number][] = [];
      for (let i = 0; i < parts.length; ) {
        if (groups[i] !== 0) {
          i++;
          continue;
        }
        let j = i;
        while (j < parts.length && groups[j] === 0) j++;
        runs.push([i, j]);
        i = j;
      }
      if (runs.length > 0 && compress > 0) {
        const [from, to] = runs[compress % runs.length]!;
        const head = parts.slice(0, from).join(':');
        const rest = [...parts.slice(to), ...tail].join(':');
        return `${head}::${rest}`;
      }
      return [...parts, ...tail].join(':');
    });

describe('login_hint properties', () => {
  it('tel: every +E.164 number from the grammar parses to itself, whatever the case of the type', () => {
    fc.assert(
      fc.property(telPrefix, e164, (prefix, number) => {
        expect(parseLoginHint(`${prefix}:${number}`)).toEqual({ type: 'tel', phoneNumber: number });
      }),
      { numRuns: RUNS },
    );
  });

  it('tel: near misses (no "+", leading 0, too short or long, separators, non-ASCII digits, whitespace) are invalid_request', () => {
    const nearMiss = fc.oneof(
      e164.map((n) => n.slice(1)), // no '+'
      digits(4, 14).map((d) => `+0${d}`), // leading zero
      fc.tuple(fc.integer({ min: 1, max: 9 }), digits(0, 3)).map(([f, d]) => `+${f}${d}`), // too short
      fc.tuple(fc.integer({ min: 1, max: 9 }), digits(15, 20)).map(([f, d]) => `+${f}${d}`), // too long
      fc
        .tuple(
          e164,
          fc.constantFrom(' ', '-', '.', '(', ')', '/', '\t', '\n', '\u00a0', '٣', '０', 'x', '+', ';ext=1'),
          fc.nat(),
        )
        .map(([n, sep, at]) => {
          const i = 1 + (at % n.length);
          return n.slice(0, i) + sep + n.slice(i);
        }),
      e164.map((n) => `${n}\n`),
      e164.map((n) => ` ${n}`),
    );
    fc.assert(
      fc.property(telPrefix, nearMiss, (prefix, value) => {
        expect(codeOf(`${prefix}:${value}`)).toBe('invalid_request');
      }),
      { numRuns: RUNS },
    );
  });

  it('ipport: every IPv4 address (and port 1..65535) parses to the address and port', () => {
    fc.assert(
      fc.property(ipportPrefix, ipv4Octets, fc.option(port, { nil: undefined }), (prefix, octets, p) => {
        const ip = octets.join('.');
        const hint = parseLoginHint(`${prefix}:${ip}${p === undefined ? '' : `:${p}`}`);
        expect(hint).toEqual({ type: 'ipport', address: p === undefined ? { ip } : { ip, port: p } });
      }),
      { numRuns: RUNS },
    );
  });

  it('ipport: every written form of an IPv6 address normalises to the same RFC 5952 address (IPv4-mapped: the IPv4 address)', () => {
    const address = fc.oneof(
      ipv6Groups,
      // Many zero groups: compression, mapped and compatible forms.
      fc
        .tuple(fc.array(fc.constantFrom(0, 0, 0, 1, 0xffff), { minLength: 6, maxLength: 6 }), group, group)
        .map(([head, a, b]) => [...head, a, b]),
      fc.tuple(group, group).map(([a, b]) => [0, 0, 0, 0, 0, 0xffff, a, b]),
      fc.tuple(group, group).map(([a, b]) => [0, 0, 0, 0, 0, 0, a, b]),
    );
    fc.assert(
      fc.property(
        address.chain((groups) => fc.tuple(fc.constant(groups), ipv6Text(groups), ipv6Text(groups))),
        fc.option(port, { nil: undefined }),
        ([groups, one, other], p) => {
          const suffix = p === undefined ? '' : `:${p}`;
          const a = parseLoginHint(`ipport:[${one}]${suffix}`);
          const b = parseLoginHint(`ipport:[${other}]${suffix}`);
          const ip = expected(groups);
          expect(a).toEqual({ type: 'ipport', address: p === undefined ? { ip } : { ip, port: p } });
          expect(b).toEqual(a);
          expect(normaliseIp(one)).toBe(ip);
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  it('ipport: IPv4-mapped IPv6 and the IPv4 address name the same device', () => {
    fc.assert(
      fc.property(ipv4Octets, fc.option(port, { nil: undefined }), (o, p) => {
        const suffix = p === undefined ? '' : `:${p}`;
        const mapped = `::ffff:${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
        const forms = [
          `ipport:${o.join('.')}${suffix}`,
          `ipport:[::ffff:${o.join('.')}]${suffix}`,
          `ipport:[${mapped}]${suffix}`,
          `ipport:[0:0:0:0:0:FFFF:${o.join('.')}]${suffix}`,
        ];
        const parsed = forms.map(parseLoginHint);
        for (const hint of parsed) expect(hint).toEqual(parsed[0]);
      }),
      { numRuns: RUNS },
    );
  });

  it('ipport: near misses (legacy IPv4 forms, bad octets, IPv6 without brackets, IPv4 in brackets, zone ids, ports 0 or > 65535, stray text) are invalid_request', () => {
    const v4 = ipv4Octets.map((o) => o.join('.'));
    const v6 = ipv6Groups.map(rfc5952);
    const nearMiss = fc.oneof(
      // Legacy IPv4 forms ipaddr.js would accept: leading zeros (octal), hex, fewer parts.
      fc
        .tuple(ipv4Octets, fc.nat({ max: 3 }))
        .map(([o, i]) => o.map((x, k) => (k === i ? `0${x}` : String(x))).join('.')),
      fc
        .tuple(ipv4Octets, fc.nat({ max: 3 }))
        .map(([o, i]) => o.map((x, k) => (k === i ? `0x${x.toString(16)}` : String(x))).join('.')),
      ipv4Octets.map((o) => `${o[0]}.${(o[1] << 16) | (o[2] << 8) | o[3]}`),
      ipv4Octets.map((o) => String(((o[0] << 24) >>> 0) + (o[1] << 16) + (o[2] << 8) + o[3])),
      fc
        .tuple(ipv4Octets, fc.integer({ min: 256, max: 99999 }), fc.nat({ max: 3 }))
        .map(([o, bad, i]) => o.map((x, k) => (k === i ? bad : x)).join('.')),
      // The same legacy forms embedded in IPv6: as ambiguous there as anywhere.
      fc
        .tuple(ipv4Octets, fc.nat({ max: 3 }))
        .map(([o, i]) => `[::ffff:${o.map((x, k) => (k === i ? `0${x}` : String(x))).join('.')}]`),
      fc
        .tuple(ipv4Octets, fc.nat({ max: 3 }))
        .map(([o, i]) => `[::ffff:${o.map((x, k) => (k === i ? `0x${x.toString(16)}` : String(x))).join('.')}]`),
      v6.filter((t) => t.includes(':')), // IPv6 without brackets
      v4.map((t) => `[${t}]`), // IPv4 in brackets
      fc.tuple(v6, fc.constantFrom('%eth0', '%25eth0', '%1')).map(([t, z]) => `[${t}${z}]`),
      fc
        .tuple(v4, fc.constantFrom('0', '00000', '65536', '99999', '100000', '-1', '+80', ' 80', '80 ', '8o', '', '٣'))
        .map(([t, p]) => `${t}:${p}`),
      fc.tuple(v6, fc.constantFrom('0', '65536', '', 'x', '٣')).map(([t, p]) => `[${t}]:${p}`),
      v6.map((t) => `[${t}`),
      fc.tuple(v6, fc.constantFrom('x', ']', ' ', '/64', '::1')).map(([t, s]) => `[${t}]${s}`),
      fc.tuple(v4, fc.constantFrom(' ', '\n', '/24', '.', 'x')).map(([t, s]) => `${t}${s}`),
      v4.map((t) => ` ${t}`),
    );
    fc.assert(
      fc.property(ipportPrefix, nearMiss, (prefix, value) => {
        expect(codeOf(`${prefix}:${value}`), value).toBe('invalid_request');
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('a well-formed hint of a type not served is unknown_user_id; no type at all is invalid_request', () => {
    const type = fc
      .stringMatching(/^[a-zA-Z][a-zA-Z0-9+.-]{0,15}$/)
      .filter((t) => !['tel', 'ipport', 'operatortoken'].includes(t.toLowerCase()));
    fc.assert(
      fc.property(type, fc.string({ minLength: 1, maxLength: 30 }), (t, identifier) => {
        expect(codeOf(`${t}:${identifier}`)).toBe('unknown_user_id');
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (value) => {
        fc.pre(!/^[a-z][a-z0-9+.-]*:[\s\S]/i.test(value));
        expect(codeOf(value)).toBe('invalid_request');
      }),
      { numRuns: RUNS },
    );
  });

  it('anything at all: either a well-formed result or invalid_request / unknown_user_id, never another exception', () => {
    const anything = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc
        .tuple(
          fc.constantFrom('tel:', 'ipport:', 'ipport:[', 'TEL:+', 'ipport:::'),
          fc.string({ unit: 'binary', maxLength: 40 }),
        )
        .map(([a, b]) => a + b),
    );
    fc.assert(
      fc.property(anything, (value) => {
        let hint: ReturnType<typeof parseLoginHint>;
        try {
          hint = parseLoginHint(value);
        } catch (error) {
          expect(error).toBeInstanceOf(OAuthError);
          expect(['invalid_request', 'unknown_user_id']).toContain((error as OAuthError).code);
          return;
        }
        if (hint.type === 'tel') expect(hint.phoneNumber).toMatch(/^\+[1-9][0-9]{4,14}$/);
        else if (hint.type === 'operatortoken')
          expect(value.toLowerCase().startsWith('operatortoken:') && hint.token !== '').toBe(true);
        else {
          expect(normaliseIp(hint.address.ip)).toBe(hint.address.ip);
          if (hint.address.port !== undefined) expect(hint.address.port).toBeGreaterThanOrEqual(1);
          if (hint.address.port !== undefined) expect(hint.address.port).toBeLessThanOrEqual(65535);
        }
      }),
      { numRuns: RUNS * 3 },
    );
  });
});
