import { createHash, createHmac, randomBytes } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/**
 * Where a refused client authentication came from, as events carry it (`client.authentication_failed`'s `source`):
 * never the address. The request's network, an IPv4 address by its /24 and an IPv6 one by its /48 (a site's
 * prefix: what one party commonly holds), is keyed-hashed (HMAC-SHA-256, 96 bits shown), so an operator can
 * count how many networks a client's failures come from without the events holding anyone's address.
 *
 * The key is derived from `pairwiseSalt`, so every instance of a fleet gives one network the same label, and a
 * restart keeps it; without the salt a random key is drawn per process (labels then differ between instances).
 */
export type SourceLabel = (ip: string | undefined) => string;

/** The network an address counts in: `a.b.c.0/24` or the /48 of an IPv6 address; undefined if unparsable. */
export function sourceNetwork(ip: string | undefined): string | undefined {
  if (ip === undefined || !ipaddr.isValid(ip)) return undefined;
  let address = ipaddr.parse(ip);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
    address = (address as ipaddr.IPv6).toIPv4Address();
  if (address.kind() === 'ipv4') return `${(address as ipaddr.IPv4).octets.slice(0, 3).join('.')}.0/24`;
  const parts = (address as ipaddr.IPv6).parts.slice(0, 3).map((p) => p.toString(16));
  return `${parts.join(':')}::/48`;
}

export function createSourceLabel(salt: string | undefined): SourceLabel {
  // Its own key, not the salt itself: a label never helps compute a pairwise subject, nor the reverse.
  const key =
    salt === undefined
      ? randomBytes(32)
      : createHash('sha256').update('express-netauth event source\n').update(salt, 'utf8').digest();
  return (ip) => {
    const network = sourceNetwork(ip);
    if (network === undefined) return 'unknown';
    const family = network.endsWith('/24') ? 'ipv4' : 'ipv6';
    return `${family}:${createHmac('sha256', key).update(network).digest('base64url').slice(0, 16)}`;
  };
}
