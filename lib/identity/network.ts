import ipaddr from 'ipaddr.js';
import type { Request } from 'express';
import { normaliseIp, type NetworkAddress } from './login-hint.js';
import type { Subscriber, SubscriberDirectory } from './subscribers.js';

export interface NetworkIdentifierOptions {
  mobileRanges: readonly string[];
  portHeader?: string;
}

/**
 * Told once each, at run time: the app's `trust proxy` makes the port header believable from anyone
 * (`NETAUTH_PORT_HEADER_TRUSTS_ANY`), the header came from a hop it does not trust and was ignored
 * (`NETAUTH_PORT_HEADER_UNTRUSTED`), or `X-Forwarded-For` came while `trust proxy` is not set
 * (`NETAUTH_FORWARDED_FOR_UNTRUSTED`). `option`: the option the fix concerns.
 */
export type TrustWarning = (option: string, message: string, code: string) => void;

/** Why a device was not identified; the endpoint turns every reason into the same answer. */
export type NetworkIdentification =
  | { identified: true; subscriber: Subscriber; address: NetworkAddress }
  | { identified: false; reason: 'no-address' | 'bad-port' | 'off-network' | 'unknown-address' };

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

function parseRange(text: string): Range {
  let range: Range;
  try {
    range = ipaddr.parseCIDR(text);
  } catch {
    throw new TypeError(`network.mobileRanges: "${text}" is not a CIDR range`);
  }
  const [address, bits] = range;
  // An IPv4-mapped IPv6 range is the IPv4 range, since device addresses are normalised the same way.
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  return range;
}

const PORT = /^[0-9]{1,5}$/;

type TrustFunction = (address: string, hop: number) => boolean;

/**
 * Whether the connection's peer is a hop Express's `trust proxy` trusts: only such a hop (the operator's edge)
 * can have written the port header. The same check Express (proxy-addr) makes before it reads X-Forwarded-For:
 * the app's compiled `trust proxy fn` asked about the socket's address as hop 0.
 */
function fromTrustedHop(req: Request): boolean {
  const trust = req.app?.get('trust proxy fn') as TrustFunction | undefined;
  const peer = req.socket?.remoteAddress;
  return typeof trust === 'function' && peer !== undefined && trust(peer, 0);
}

/**
 * The frontend flow's subscriber identification: the request's client IP (as Express's `trust proxy`
 * decides), optionally with the source port the operator's edge reports (CGNAT), must lie in the
 * operator's mobile ranges and be mapped to a subscriber by the directory.
 */
export class NetworkIdentifier {
  private readonly ranges: Range[];
  private readonly portHeader: string | undefined;
  private trustChecked = false;
  private untrustedWarned = false;
  private forwardedChecked = false;

  constructor(
    options: NetworkIdentifierOptions,
    private readonly warnTrust: TrustWarning = () => undefined,
  ) {
    if (!Array.isArray(options.mobileRanges)) throw new TypeError('network.mobileRanges must be a list of CIDR ranges');
    this.ranges = options.mobileRanges.map(parseRange);
    if (options.portHeader !== undefined && !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(options.portHeader)) {
      throw new TypeError('network.portHeader must be an HTTP header name');
    }
    this.portHeader = options.portHeader?.toLowerCase();
  }

  /** True when the (normalised) IP lies in one of the mobile ranges. */
  isMobile(ip: string): boolean {
    if (!ipaddr.isValid(ip)) return false;
    const address = ipaddr.parse(ip);
    return this.ranges.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
  }

  /**
   * The device's address: `req.ip`, normalised (IPv4-mapped IPv6 is IPv4), plus the port header when
   * configured and the connection comes from a proxy `trust proxy` trusts (a device reaching the gateway
   * directly could otherwise name any port, and so any subscriber behind its CGNAT address). `bad-port` when
   * a believed header is not one port in 1..65535.
   */
  deviceAddress(req: Request): NetworkAddress | 'no-address' | 'bad-port' {
    const ip = req.ip === undefined ? undefined : normaliseIp(req.ip);
    if (ip === undefined) return 'no-address';
    if (!this.forwardedChecked && req.headers['x-forwarded-for'] !== undefined) this.checkForwardedFor(req);
    if (this.portHeader === undefined) return { ip };
    if (!this.trustChecked) this.checkTrust(req);
    const header = req.headers[this.portHeader];
    if (header === undefined) return { ip };
    if (!fromTrustedHop(req)) {
      if (!this.untrustedWarned) this.warnUntrusted();
      return { ip };
    }
    const text = Array.isArray(header) ? undefined : header.trim();
    if (text === undefined || !PORT.test(text)) return 'bad-port';
    const port = Number(text);
    if (port < 1 || port > 65535) return 'bad-port';
    return { ip, port };
  }

  /**
   * `X-Forwarded-For` arrived and the app trusts no proxy: `req.ip` is then the proxy's address for every device,
   * which is in no mobile range (or names no subscriber), so every device gets access_denied. Said once, at the
   * first such request; with `trust proxy` set, an untrusted peer's header is a device's own and says nothing.
   */
  private checkForwardedFor(req: Request): void {
    this.forwardedChecked = true;
    const setting: unknown = (req as Partial<Request>).app?.get('trust proxy');
    if (setting !== false && setting !== undefined) return;
    this.warnTrust(
      'network',
      'a request carried X-Forwarded-For but the app does not set trust proxy, so the device address is the ' +
        "proxy's and no device is identified (access_denied) (said once). Name the operator's edge proxies: " +
        "app.set('trust proxy', ['10.0.0.10']).",
      'NETAUTH_FORWARDED_FOR_UNTRUSTED',
    );
  }

  /**
   * `trust proxy` as `true` or a hop count trusts whatever peer connects, so any device reaching the gateway
   * directly could name its port, and so any subscriber behind its CGNAT address. Only the app knows the
   * setting, so it is read at the first request (the app the router is mounted on is not known before).
   */
  private checkTrust(req: Request): void {
    this.trustChecked = true;
    // A request outside an Express app has no setting to read.
    const setting: unknown = (req as Partial<Request>).app?.get('trust proxy');
    if (setting !== true && typeof setting !== 'number') return;
    this.warnTrust(
      'network.portHeader',
      `trust proxy is ${String(setting)}: every peer is trusted, so network.portHeader is believed from any ` +
        "connection. Set trust proxy to the addresses of the operator's edge proxies.",
      'NETAUTH_PORT_HEADER_TRUSTS_ANY',
    );
  }

  /**
   * The header came from a peer `trust proxy` does not trust: ignored (a device could name any port), so devices
   * behind a CGNAT address are not told apart. Said once: when the operator's edge sets the header, `trust proxy`
   * misses its address. The peer's address is not logged (it may be a subscriber's).
   */
  private warnUntrusted(): void {
    this.untrustedWarned = true;
    this.warnTrust(
      'network.portHeader',
      `network.portHeader (${this.portHeader}) came from a peer that trust proxy does not trust, so it is ignored ` +
        "(said once). If the operator's edge proxies set it, add their addresses to the app's trust proxy setting, " +
        "e.g. app.set('trust proxy', ['10.0.0.10']).",
      'NETAUTH_PORT_HEADER_UNTRUSTED',
    );
  }

  /**
   * The device as the per-address rate limit counts it: the address, with the CGNAT port when the operator's edge
   * gave one (believed as for identification), so one device behind a shared address never uses up another's
   * allowance. A request whose port cannot be read counts by its address alone.
   */
  countedDevice(req: Request): { ip: string | undefined; port?: number } {
    const address = this.deviceAddress(req);
    return typeof address === 'string' ? { ip: req.ip } : address;
  }

  async identify(req: Request, directory: SubscriberDirectory): Promise<NetworkIdentification> {
    const address = this.deviceAddress(req);
    if (typeof address === 'string') return { identified: false, reason: address };
    if (!this.isMobile(address.ip)) return { identified: false, reason: 'off-network' };
    const subscriber = await directory.findByNetworkAddress(address);
    if (!subscriber) return { identified: false, reason: 'unknown-address' };
    return { identified: true, subscriber, address };
  }
}
