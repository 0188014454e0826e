import { E164, normaliseIp, type LoginHint, type NetworkAddress } from './login-hint.js';
import { checkNames, describe, isPlainObject, optionNames } from '../option-checks.js';

/** A mobile subscriber. `id` is the operator's stable, opaque identifier; never a phone number in logs. */
export interface Subscriber {
  /** The operator's opaque subscriber id: what consent records and tokens refer to. */
  id: string;
  /** E.164 with leading "+", when the subscriber has a line. */
  phoneNumber?: string;
}

/**
 * The operator's subscriber database, behind the one interface this package asks of it.
 * Implement it over your HLR/UDM, CGNAT session logs or RADIUS accounting.
 */
export interface SubscriberDirectory {
  findByPhoneNumber(phoneNumber: string): Promise<Subscriber | undefined>;
  /** `port` is present when the operator's edge supplies the source port (CGNAT). */
  findByNetworkAddress(address: NetworkAddress): Promise<Subscriber | undefined>;
  /** Optional: the subscriber behind a GSMA TS.43 token (`login_hint=operatortoken:<token>`). Without it such hints are `unknown_user_id`. */
  findByOperatorToken?(token: string): Promise<Subscriber | undefined>;
  /**
   * Optional: the subscriber with this opaque id. The guard's device identification asks it for the phone number of
   * a JWT access token's subscriber (a JWT carries only the id, never the number). Without it, such a subscriber
   * is handed to the route without `phoneNumber`.
   */
  findById?(id: string): Promise<Subscriber | undefined>;
}

export interface StaticSubscriber extends Subscriber {
  /**
   * Addresses the subscriber's device uses: `"10.0.0.7"`, `"2001:db8::7"`, or with a CGNAT port range
   * `"100.64.0.1:1024-2047"` / `"[2001:db8::7]:1024-2047"`. An address without ports matches every port; one
   * with ports is found only when the port is known (the edge's port header, or an `ipport:` hint with a port).
   */
  addresses?: string[];
}

interface AddressRule {
  ip: string;
  from: number;
  to: number;
  subscriber: Subscriber;
}

function parseAddressRule(text: string, subscriber: Subscriber): AddressRule {
  let host = text;
  let ports: string | undefined;
  const bracket = /^\[([^\]]+)\](?::(.+))?$/.exec(text);
  if (bracket) {
    host = bracket[1]!;
    ports = bracket[2];
  } else if (text.split(':').length === 2) {
    [host, ports] = text.split(':') as [string, string];
  }
  const ip = normaliseIp(host);
  if (!ip) throw new TypeError(`subscriber ${subscriber.id}: "${text}" is not an IP address`);
  if (ports === undefined) return { ip, from: 1, to: 65535, subscriber };
  const range = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(ports);
  const from = range ? Number(range[1]) : NaN;
  const to = range ? Number(range[2] ?? range[1]) : NaN;
  if (!(from >= 1 && to <= 65535 && from <= to)) {
    throw new TypeError(`subscriber ${subscriber.id}: "${text}" has an invalid port range`);
  }
  return { ip, from, to, subscriber };
}

const SUBSCRIBER_FIELDS = optionNames<StaticSubscriber>({ id: true, phoneNumber: true, addresses: true });

/** One entry of the table: a subscriber no request could find (a number without `+`, say) is an error now. */
function checkEntry(entry: StaticSubscriber, i: number): void {
  const where = `subscribers[${i}]`;
  if (!isPlainObject(entry))
    throw new TypeError(`${where} must be an object ({ id, phoneNumber?, addresses? }), not ${describe(entry)}`);
  if (typeof entry.id !== 'string' || entry.id === '')
    throw new TypeError(`${where}.id must be the subscriber's non-empty, opaque id`);
  checkNames(entry as unknown as Record<string, unknown>, SUBSCRIBER_FIELDS, `subscriber ${entry.id}: `, 'field');
  if (entry.phoneNumber !== undefined && (typeof entry.phoneNumber !== 'string' || !E164.test(entry.phoneNumber))) {
    // Only the field is named: a phone number never goes into a message.
    throw new TypeError(
      `subscriber ${entry.id}: phoneNumber must be E.164 with a leading "+" (e.g. +34600000001), as tel: login hints are`,
    );
  }
  if (
    entry.addresses !== undefined &&
    !(Array.isArray(entry.addresses) && entry.addresses.every((a) => typeof a === 'string'))
  ) {
    throw new TypeError(
      `subscriber ${entry.id}: addresses must be a list of strings ("10.0.0.7", "100.64.0.1:1024-2047")`,
    );
  }
}

/** A directory from a fixed table: the embedded default, for the demo, tests and sandboxes. */
export class StaticSubscriberDirectory implements SubscriberDirectory {
  private readonly byPhone = new Map<string, Subscriber>();
  private readonly byId = new Map<string, Subscriber>();
  private readonly byIp = new Map<string, AddressRule[]>();

  constructor(subscribers: readonly StaticSubscriber[]) {
    if (!Array.isArray(subscribers))
      throw new TypeError('subscribers must be a list of subscribers or a SubscriberDirectory');
    const ids = new Set<string>();
    subscribers.forEach((entry, i) => {
      checkEntry(entry, i);
      if (ids.has(entry.id))
        throw new TypeError(`subscribers[${i}]: the id ${entry.id} is used twice; give each subscriber its own id`);
      ids.add(entry.id);
      if (entry.phoneNumber !== undefined && this.byPhone.has(entry.phoneNumber)) {
        throw new TypeError(
          `subscriber ${entry.id}: its phoneNumber is already another subscriber's; a line belongs to one subscriber`,
        );
      }
      const subscriber: Subscriber =
        entry.phoneNumber === undefined ? { id: entry.id } : { id: entry.id, phoneNumber: entry.phoneNumber };
      if (entry.phoneNumber !== undefined) this.byPhone.set(entry.phoneNumber, subscriber);
      this.byId.set(entry.id, subscriber);
      for (const text of entry.addresses ?? []) {
        const rule = parseAddressRule(text, subscriber);
        const rules = this.byIp.get(rule.ip) ?? [];
        rules.push(rule);
        this.byIp.set(rule.ip, rules);
      }
    });
  }

  async findByPhoneNumber(phoneNumber: string): Promise<Subscriber | undefined> {
    return this.byPhone.get(phoneNumber);
  }

  async findById(id: string): Promise<Subscriber | undefined> {
    return this.byId.get(id);
  }

  async findByNetworkAddress(address: NetworkAddress): Promise<Subscriber | undefined> {
    const rules = this.byIp.get(address.ip);
    if (!rules) return undefined;
    if (address.port === undefined) {
      // Without a port only an entry for every port can name someone: a port-restricted one (`ip:1024-2047`)
      // says the address is shared (CGNAT), so without the port it names nobody, nor does an address that
      // several subscribers share.
      const first = rules[0]!.subscriber;
      if (rules.some((r) => r.subscriber.id !== first.id)) return undefined;
      return rules.find((r) => r.from === 1 && r.to === 65535)?.subscriber;
    }
    const port = address.port;
    return rules.find((r) => port >= r.from && port <= r.to)?.subscriber;
  }
}

/** Resolves a parsed login_hint to the subscriber it names, if any. */
export async function findByLoginHint(
  directory: SubscriberDirectory,
  hint: LoginHint,
): Promise<Subscriber | undefined> {
  if (hint.type === 'tel') return directory.findByPhoneNumber(hint.phoneNumber);
  if (hint.type === 'ipport') return directory.findByNetworkAddress(hint.address);
  return directory.findByOperatorToken?.(hint.token);
}
