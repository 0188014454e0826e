import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where the gateway may fetch a client's `jwksUri` from (issue 32: a registration must not turn the gateway into a
 * request forwarder into the operator's network, SSRF). By default only `https:` to public addresses: never
 * private, loopback, link-local, unique-local, CGNAT, multicast or reserved ones. Origins an operator lists in
 * `clientJwks.internalOrigins` are let through (a key server inside the network, a development server on loopback).
 * A host name is resolved before the fetch, every address it resolves to is checked, and the connection goes to the
 * checked address (no second lookup an attacker's DNS could answer differently).
 */

const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv6');
}

/**
 * IPv6 prefixes whose addresses carry an IPv4 address, which is what a packet to them reaches (through the host's
 * own stack, an operator's NAT64, a 6to4 relay): such an address is judged by the IPv4 address it carries. The
 * prefix as bytes, and where the IPv4 address starts.
 */
const EMBEDDED_IPV4: ReadonlyArray<{ prefix: readonly number[]; at: number }> = [
  // ::/96, IPv4-compatible (RFC 4291 §2.5.5.1, deprecated); `::` and `::1` fall in it, judged as 0.0.0.0/8.
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], at: 12 },
  // ::ffff:0:0/96, IPv4-mapped (RFC 4291 §2.5.5.2).
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], at: 12 },
  // ::ffff:0:0:0/96, IPv4-translated (RFC 2765 §2.1).
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0], at: 12 },
  // 64:ff9b::/96, the NAT64 well-known prefix (RFC 6052 §2.1), common in operator networks.
  { prefix: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], at: 12 },
  // 2002::/16, 6to4 (RFC 3056 §2): the IPv4 address follows the prefix.
  { prefix: [0x20, 0x02], at: 2 },
];

/** The IPv4 address an IPv6 address carries under one of EMBEDDED_IPV4's prefixes, or undefined. */
function embeddedIpv4(address: string): string | undefined {
  let bytes: number[];
  try {
    bytes = ipaddr.IPv6.parse(address).toByteArray();
  } catch {
    return undefined;
  }
  const found = EMBEDDED_IPV4.find(({ prefix }) => prefix.every((byte, i) => bytes[i] === byte));
  return found === undefined ? undefined : bytes.slice(found.at, found.at + 4).join('.');
}

/**
 * An address that is not on the public Internet. An IPv6 address that carries an IPv4 one (IPv4-compatible,
 * -mapped, -translated, NAT64, 6to4) is judged by the IPv4 address, the one its packets reach.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  const ipv4 = embeddedIpv4(address);
  return ipv4 !== undefined ? INTERNAL.check(ipv4, 'ipv4') : INTERNAL.check(address, 'ipv6');
}

/** The address a `jwksUri` is fetched from: resolved and checked once, then connected to as is. */
export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

/** A `jwksUri` the policy does not let the gateway fetch. The message names the URI's host, never more. */
export class JwksDestinationRefusedError extends Error {
  /** Stable, for programs: the message is for people. */
  readonly code = 'NETAUTH_JWKS_DESTINATION_REFUSED';
  constructor(reason: string) {
    super(reason);
    this.name = 'JwksDestinationRefusedError';
  }
}

/** The host of a URL without the brackets of an IPv6 literal. */
function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

function originsOf(internalOrigins: unknown): ReadonlySet<string> {
  if (internalOrigins === undefined) return new Set();
  if (!Array.isArray(internalOrigins))
    throw new TypeError('clientJwks.internalOrigins must be a list of origins, e.g. ["https://keys.internal:8443"]');
  const origins = new Set<string>();
  for (const origin of internalOrigins) {
    const url = typeof origin === 'string' && URL.canParse(origin) ? new URL(origin) : undefined;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== origin.replace(/\/$/, '')) {
      throw new TypeError(
        `clientJwks.internalOrigins: ${JSON.stringify(origin)} is not an origin; ` +
          'write scheme://host[:port] (http or https), without path',
      );
    }
    origins.add(url.origin);
  }
  return origins;
}

/** The destination policy for clients' `jwksUri`s, with the operator's exceptions (checked when it is built). */
export class JwksDestinations {
  private readonly internalOrigins: ReadonlySet<string>;

  constructor(internalOrigins: readonly string[] | undefined) {
    this.internalOrigins = originsOf(internalOrigins);
  }

  private allowed(url: URL): boolean {
    return this.internalOrigins.has(url.origin);
  }

  /**
   * What can be told without a DNS lookup: `https:` (or an allowed origin), and a host that is not an internal
   * address literal. Throws a TypeError naming the client and `jwksUri` (a registration error).
   */
  check(clientId: string, uri: string): void {
    const url = URL.canParse(uri) ? new URL(uri) : undefined;
    if (!url) throw new TypeError(`client ${clientId}: jwksUri "${uri}" is not an absolute URL`);
    if (this.allowed(url)) return;
    if (url.protocol !== 'https:') {
      throw new TypeError(
        `client ${clientId}: jwksUri "${uri}" must use https: ` +
          '(list its origin in clientJwks.internalOrigins to allow it)',
      );
    }
    if (isIP(bareHost(url)) !== 0 && isInternalAddress(bareHost(url))) {
      throw new TypeError(
        `client ${clientId}: jwksUri "${uri}" names a private, loopback or link-local address ` +
          '(list its origin in clientJwks.internalOrigins to allow it)',
      );
    }
  }

  /**
   * Resolves the URI's host and checks every address it resolves to (unless its origin is allowed); the first is
   * the one to connect to. Throws JwksDestinationRefusedError.
   */
  async resolve(uri: string): Promise<PinnedAddress> {
    const url = new URL(uri);
    const host = bareHost(url);
    const literal = isIP(host);
    const allowed = this.allowed(url);
    if (!allowed && url.protocol !== 'https:') throw new JwksDestinationRefusedError('is not https:');
    let addresses: PinnedAddress[];
    if (literal !== 0) {
      addresses = [{ address: host, family: literal as 4 | 6 }];
    } else {
      try {
        addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => ({
          address: a.address,
          family: a.family as 4 | 6,
        }));
      } catch {
        throw new JwksDestinationRefusedError('has a host that does not resolve');
      }
    }
    if (addresses.length === 0) throw new JwksDestinationRefusedError('has a host that does not resolve');
    if (!allowed && addresses.some((a) => isInternalAddress(a.address))) {
      throw new JwksDestinationRefusedError('resolves to a private, loopback or link-local address');
    }
    return addresses[0]!;
  }
}
