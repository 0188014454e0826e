import ipaddr from 'ipaddr.js';
import { OAuthError } from '../errors.js';

/** A device address as the network sees it: an IP (normalised) and, behind CGNAT, a source port. */
export interface NetworkAddress {
  /** Normalised textual form: IPv4 dotted quad, or IPv6 in RFC 5952 form. IPv4-mapped IPv6 becomes IPv4. */
  ip: string;
  port?: number;
}

export type LoginHint =
  | { type: 'tel'; phoneNumber: string }
  | { type: 'ipport'; address: NetworkAddress }
  /** A GSMA TS.43 token (format not specified there), resolved by the directory's optional `findByOperatorToken`. */
  | { type: 'operatortoken'; token: string };

/** A phone number as `tel:` hints and the directory carry it: E.164 with its `+`. */
export const E164 = /^\+[1-9][0-9]{4,14}$/;
const PORT = /^[0-9]{1,5}$/;
const SERVED_TYPES = new Set(['tel', 'ipport', 'operatortoken']);
const TYPE = /^[a-z][a-z0-9+.-]*$/i;

/**
 * Normalises an IP address. IPv4-mapped IPv6 (`::ffff:192.0.2.1`) is the IPv4 address, so a subscriber
 * is the same whichever stack the request arrived on.
 */
export function normaliseIp(text: string): string | undefined {
  if (text.includes('%')) return undefined; // zone ids name an interface, not a subscriber
  // ipaddr.js accepts legacy IPv4 forms (octal, hex, short); only the four-part decimal form is an address here.
  if (!text.includes(':')) return ipaddr.IPv4.isValidFourPartDecimal(text) ? text : undefined;
  const ipv6 = ipv6WithoutDottedTail(text);
  if (ipv6 === undefined || !ipaddr.IPv6.isValid(ipv6)) return undefined;
  const parsed = ipaddr.IPv6.parse(ipv6);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  return parsed.toRFC5952String();
}

/**
 * An IPv6 address whose low 32 bits are written as a dotted quad (`::ffff:192.0.2.1`, `64:ff9b::192.0.2.1`),
 * with that quad rewritten as two hex groups. The quad must be four-part decimal, as anywhere else (ipaddr.js
 * would take hex and leading zeros there), and ipaddr.js's reading of `::a.b.c.d` as IPv4-*mapped* is
 * avoided: that form is the IPv4-compatible address `::a.b.c.d` = `::xxxx:xxxx`, which is not the IPv4 address.
 */
function ipv6WithoutDottedTail(text: string): string | undefined {
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (!tail.includes('.')) return text;
  if (!ipaddr.IPv4.isValidFourPartDecimal(tail)) return undefined;
  const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
  return `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

function parsePort(text: string): number | undefined {
  if (!PORT.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

function malformed(description: string): OAuthError {
  return new OAuthError('invalid_request', `login_hint ${description}`);
}

/** `ipport:` identifier: `<ipv4>`, `<ipv4>:<port>`, `[<ipv6>]`, `[<ipv6>]:<port>`. */
function parseIpPort(identifier: string): NetworkAddress {
  let host: string;
  let portText: string | undefined;
  if (identifier.startsWith('[')) {
    const close = identifier.indexOf(']');
    if (close < 0) throw malformed('has an unclosed IPv6 bracket');
    host = identifier.slice(1, close);
    const rest = identifier.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) throw malformed('has text after the IPv6 address');
      portText = rest.slice(1);
    }
    if (!host.includes(':')) throw malformed('has an IPv4 address in IPv6 brackets');
  } else {
    const parts = identifier.split(':');
    if (parts.length > 2) throw malformed('has an IPv6 address without square brackets');
    host = parts[0]!;
    portText = parts[1];
  }
  const ip = normaliseIp(host);
  if (!ip) throw malformed('has an invalid IP address');
  if (portText === undefined) return { ip };
  const port = parsePort(portText);
  if (port === undefined) throw malformed('has a port outside 1..65535');
  return { ip, port };
}

/**
 * Parses `<identifier_type>:<identifier>`. Malformed values are `invalid_request`; a well-formed hint
 * of a type this service does not serve (e.g. `msisdn:`) is `unknown_user_id`.
 */
export function parseLoginHint(value: string): LoginHint {
  const colon = value.indexOf(':');
  if (colon <= 0) throw malformed('must be <identifier_type>:<identifier>');
  const type = value.slice(0, colon).toLowerCase();
  const identifier = value.slice(colon + 1);
  if (!TYPE.test(type) || identifier === '') throw malformed('must be <identifier_type>:<identifier>');
  if (!SERVED_TYPES.has(type)) throw new OAuthError('unknown_user_id', `login_hint type "${type}" is not served`);
  if (type === 'tel') {
    if (!E164.test(identifier))
      throw malformed('tel must be a global E.164 number with a leading "+" and no separators');
    return { type: 'tel', phoneNumber: identifier };
  }
  if (type === 'operatortoken') return { type: 'operatortoken', token: identifier };
  return { type: 'ipport', address: parseIpPort(identifier) };
}
