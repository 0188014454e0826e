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
  | { type: 'ipport'; address: NetworkAddress };

const E164 = /^\+[1-9][0-9]{4,14}$/;
const PORT = /^[0-9]{1,5}$/;
const SERVED_TYPES = new Set(['tel', 'ipport']);
const TYPE = /^[a-z][a-z0-9+.-]*$/i;

/**
 * Normalises an IP address. IPv4-mapped IPv6 (`::ffff:192.0.2.1`) is the IPv4 address, so a subscriber
 * is the same whichever stack the request arrived on.
 */
export function normaliseIp(text: string): string | undefined {
  if (!ipaddr.isValid(text)) return undefined;
  // ipaddr.js accepts legacy IPv4 forms (octal, hex, short); only the four-part decimal form is an address here.
  if (!text.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
  if (text.includes('%')) return undefined; // zone ids name an interface, not a subscriber
  const parsed = ipaddr.parse(text);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
    return v6.toRFC5952String();
  }
  return parsed.toString();
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
 * of a type this service does not serve (e.g. `operatortoken:`) is `unknown_user_id`.
 */
export function parseLoginHint(value: string): LoginHint {
  const colon = value.indexOf(':');
  if (colon <= 0) throw malformed('must be <identifier_type>:<identifier>');
  const type = value.slice(0, colon).toLowerCase();
  const identifier = value.slice(colon + 1);
  if (!TYPE.test(type) || identifier === '') throw malformed('must be <identifier_type>:<identifier>');
  if (!SERVED_TYPES.has(type)) throw new OAuthError('unknown_user_id', `login_hint type "${type}" is not served`);
  if (type === 'tel') {
    if (!E164.test(identifier)) throw malformed('tel must be a global E.164 number with a leading "+" and no separators');
    return { type: 'tel', phoneNumber: identifier };
  }
  return { type: 'ipport', address: parseIpPort(identifier) };
}
