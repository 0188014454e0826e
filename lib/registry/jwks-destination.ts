import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

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
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv6');
}

/** An address that is not on the public Internet (IPv4-mapped IPv6 addresses are judged by their IPv4 address). */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return INTERNAL.check(address, family === 4 ? 'ipv4' : 'ipv6');
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
