import express, { type Request, type RequestHandler, type Response } from 'express';
import { E164, normaliseIp, type NetworkAddress } from '../identity/login-hint.js';
import type { Subscriber, SubscriberDirectory } from '../identity/subscribers.js';
import { camaraError, type CamaraErrorInfo } from './responses.js';
import { isPlainObject } from '../option-checks.js';
import { GUARD_DEVICE_DEFAULTS } from '../defaults.js';

/**
 * CAMARA device identification for three-legged and two-legged tokens (API Design Guide §3.2.2 and Appendix A):
 * the device an API call is about comes from the access token or from the request body, never from both.
 */

/** Where a request names the device. */
export interface DeviceOptions {
  /**
   * `device` (default): the body's `device` object (CAMARA_common.yaml `Device`); `phoneNumber`: the body's
   * `phoneNumber` field; `none`: the request never names it, only a three-legged token identifies it (an API
   * whose body holds a number to check rather than an identifier, such as Number Verification).
   */
  identifier?: 'device' | 'phoneNumber' | 'none';
  /**
   * The API's scope lets it confirm whether an identifier matches the token's (Number Verification, KYC Match):
   * an identifier beside a three-legged token is then compared, a mismatch being 403 `INVALID_TOKEN_CONTEXT`.
   * Without it, any identifier beside a three-legged token is 422 `UNNECESSARY_IDENTIFIER`, matching or not,
   * so the answer never tells whose token it is.
   * @defaultValue false
   */
  confirm?: boolean;
}

/** A device identifier as the Commonalities define it (`Device`, at most one member in a `DeviceResponse`). */
export interface DeviceIdentifier {
  phoneNumber?: string;
  networkAccessIdentifier?: string;
  ipv4Address?: { publicAddress: string; privateAddress?: string; publicPort?: number };
  ipv6Address?: string;
}

/** The device a request is about, at `req.netauth.device`. */
export interface NetAuthDevice {
  /** `token`: the three-legged access token's subscriber; `request`: the body's identifier (a token with no subscriber). */
  identifiedBy: 'token' | 'request';
  /**
   * The subscriber. Identified by the token: with the phone number when the gateway knows it. Identified by the
   * request (a two-legged token): the operator's id, and a phone number only when the request named it, so an
   * address never discloses a subscriber's number to a client that holds no subscriber's consent.
   */
  subscriber: Subscriber;
  /**
   * The one identifier of the request that was used, exactly as sent: what a `DeviceResponse` may echo (the
   * Commonalities forbid answering with an identifier the consumer did not send). Absent when the token identified it.
   */
  identifier?: DeviceIdentifier;
}

const invalid = (message: string): CamaraErrorInfo => camaraError(400, 'INVALID_ARGUMENT', message);

function ipv4(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= 15 && !value.includes(':') ? normaliseIp(value) : undefined;
}

/** The body's `device` object, checked against CAMARA_common.yaml; undefined when there is none. */
function parseDevice(value: unknown): DeviceIdentifier | CamaraErrorInfo | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) return invalid('device must be an object');
  const device: DeviceIdentifier = {};
  const { phoneNumber, networkAccessIdentifier, ipv4Address, ipv6Address } = value;
  if (phoneNumber !== undefined) {
    if (typeof phoneNumber !== 'string' || !E164.test(phoneNumber))
      return invalid('device.phoneNumber must be +<E.164>');
    device.phoneNumber = phoneNumber;
  }
  if (networkAccessIdentifier !== undefined) {
    if (
      typeof networkAccessIdentifier !== 'string' ||
      networkAccessIdentifier === '' ||
      networkAccessIdentifier.length > 2048
    ) {
      return invalid('device.networkAccessIdentifier must be a string of at most 2048 characters');
    }
    device.networkAccessIdentifier = networkAccessIdentifier;
  }
  if (ipv4Address !== undefined) {
    if (!isPlainObject(ipv4Address)) return invalid('device.ipv4Address must be an object');
    const { publicAddress, privateAddress, publicPort } = ipv4Address;
    if (ipv4(publicAddress) === undefined) return invalid('device.ipv4Address.publicAddress must be an IPv4 address');
    if (privateAddress !== undefined && ipv4(privateAddress) === undefined)
      return invalid('device.ipv4Address.privateAddress must be an IPv4 address');
    if (
      publicPort !== undefined &&
      !(Number.isInteger(publicPort) && (publicPort as number) >= 1 && (publicPort as number) <= 65535)
    ) {
      return invalid('device.ipv4Address.publicPort must be a port number (1-65535)');
    }
    if (privateAddress === undefined && publicPort === undefined)
      return invalid('device.ipv4Address needs privateAddress or publicPort beside publicAddress');
    device.ipv4Address = {
      publicAddress: publicAddress as string,
      ...(privateAddress === undefined ? {} : { privateAddress: privateAddress as string }),
      ...(publicPort === undefined ? {} : { publicPort: publicPort as number }),
    };
  }
  if (ipv6Address !== undefined) {
    if (
      typeof ipv6Address !== 'string' ||
      ipv6Address.length > 45 ||
      !ipv6Address.includes(':') ||
      normaliseIp(ipv6Address) === undefined
    ) {
      return invalid('device.ipv6Address must be an IPv6 address');
    }
    device.ipv6Address = ipv6Address;
  }
  if (Object.keys(device).length === 0)
    return invalid('device must name at least one of phoneNumber, networkAccessIdentifier, ipv4Address, ipv6Address');
  return device;
}

/** The request's identifier, by the route's rule; undefined when the body names none. */
function requestedIdentifier(
  body: unknown,
  field: 'device' | 'phoneNumber',
): DeviceIdentifier | CamaraErrorInfo | undefined {
  if (body === undefined) return undefined;
  if (!isPlainObject(body)) return invalid('the request body must be a JSON object');
  if (field === 'device') return parseDevice(body.device);
  const phoneNumber = body.phoneNumber;
  if (phoneNumber === undefined) return undefined;
  if (typeof phoneNumber !== 'string' || !E164.test(phoneNumber)) return invalid('phoneNumber must be +<E.164>');
  return { phoneNumber };
}

/**
 * The one identifier used, as sent, when several are (the Commonalities' `Device` note: no matching among them):
 * the first this gateway can resolve, phone number before addresses. A network access identifier alone cannot be
 * resolved (CAMARA does not allow its use yet, and the directory has no lookup for it).
 */
function chosen(identifier: DeviceIdentifier): DeviceIdentifier | undefined {
  if (identifier.phoneNumber !== undefined) return { phoneNumber: identifier.phoneNumber };
  if (identifier.ipv4Address !== undefined) return { ipv4Address: identifier.ipv4Address };
  if (identifier.ipv6Address !== undefined) return { ipv6Address: identifier.ipv6Address };
  return undefined;
}

function lookup(directory: SubscriberDirectory, identifier: DeviceIdentifier): Promise<Subscriber | undefined> {
  if (identifier.phoneNumber !== undefined) return directory.findByPhoneNumber(identifier.phoneNumber);
  const { ipv4Address, ipv6Address } = identifier;
  const address: NetworkAddress = ipv4Address
    ? {
        ip: normaliseIp(ipv4Address.publicAddress)!,
        ...(ipv4Address.publicPort === undefined ? {} : { port: ipv4Address.publicPort }),
      }
    : { ip: normaliseIp(ipv6Address!)! };
  return directory.findByNetworkAddress(address);
}

/** The token's subscriber with its phone number: the token record's, else the directory's (a JWT carries only the id). */
async function withPhoneNumber(directory: SubscriberDirectory, subscriber: Subscriber): Promise<Subscriber> {
  if (subscriber.phoneNumber !== undefined || !directory.findById) return subscriber;
  const found = await directory.findById(subscriber.id);
  return found?.phoneNumber === undefined || found.id !== subscriber.id
    ? subscriber
    : { id: subscriber.id, phoneNumber: found.phoneNumber };
}

/** A body-parser failure as the Commonalities name it. */
function bodyFailure(error: unknown): CamaraErrorInfo {
  const status = (error as { status?: unknown }).status;
  if (status === 415)
    return camaraError(415, 'UNSUPPORTED_MEDIA_TYPE', 'The request body is in an unsupported format.');
  return invalid(status === 413 ? 'The request body is too large.' : 'The request body is not valid JSON.');
}

export type DeviceIdentification = (
  req: Request,
  res: Response,
  tokenSubscriber: Subscriber | undefined,
) => Promise<NetAuthDevice | CamaraErrorInfo>;

/**
 * The rules of Appendix A, for one route. The body is read as JSON here when no parser ran before the guard
 * (`bodyLimit` bytes at most), so the route needs no code of its own for any of this.
 */
export function deviceIdentification(
  directory: SubscriberDirectory,
  options: DeviceOptions,
  bodyLimit: string | number,
): DeviceIdentification {
  const field = options.identifier ?? GUARD_DEVICE_DEFAULTS.identifier;
  if (field !== 'device' && field !== 'phoneNumber' && field !== 'none')
    throw new TypeError("guard device.identifier must be 'device', 'phoneNumber' or 'none'");
  const confirm = options.confirm ?? GUARD_DEVICE_DEFAULTS.confirm;
  if (typeof confirm !== 'boolean') throw new TypeError('guard device.confirm must be true or false');
  const json: RequestHandler = express.json({ limit: bodyLimit });
  const readBody = (req: Request, res: Response): Promise<{ body: unknown } | CamaraErrorInfo> =>
    req.body !== undefined
      ? Promise.resolve({ body: req.body as unknown })
      : new Promise(
          (resolve) =>
            void json(req, res, (error?: unknown) =>
              resolve(error ? bodyFailure(error) : { body: req.body as unknown }),
            ),
        );

  return async (req, res, tokenSubscriber) => {
    let requested: DeviceIdentifier | undefined;
    if (field !== 'none') {
      const read = await readBody(req, res);
      if (!('body' in read)) return read;
      const parsed = requestedIdentifier(read.body, field);
      if (parsed !== undefined && 'code' in parsed) return parsed;
      requested = parsed;
    }
    if (requested === undefined) {
      if (tokenSubscriber === undefined)
        return camaraError(422, 'MISSING_IDENTIFIER', 'The device cannot be identified.');
      return { identifiedBy: 'token', subscriber: await withPhoneNumber(directory, tokenSubscriber) };
    }
    if (tokenSubscriber !== undefined && !confirm)
      return camaraError(422, 'UNNECESSARY_IDENTIFIER', 'The device is already identified by the access token.');
    const identifier = chosen(requested);
    if (identifier === undefined)
      return camaraError(422, 'UNSUPPORTED_IDENTIFIER', 'The identifier provided is not supported.');
    if (tokenSubscriber !== undefined) {
      const subscriber = await withPhoneNumber(directory, tokenSubscriber);
      const same =
        identifier.phoneNumber !== undefined && subscriber.phoneNumber !== undefined
          ? identifier.phoneNumber === subscriber.phoneNumber
          : (await lookup(directory, identifier))?.id === subscriber.id;
      if (!same)
        return camaraError(
          403,
          'INVALID_TOKEN_CONTEXT',
          `${field === 'device' ? 'device' : 'phoneNumber'} is not consistent with access token.`,
        );
      return { identifiedBy: 'token', subscriber, identifier };
    }
    const found = await lookup(directory, identifier);
    if (found === undefined) return camaraError(404, 'IDENTIFIER_NOT_FOUND', 'Device identifier not found.');
    // Issue 32, item 10: what the service API needs to act on the device, never more than the client sent.
    const subscriber: Subscriber =
      identifier.phoneNumber === undefined ? { id: found.id } : { id: found.id, phoneNumber: identifier.phoneNumber };
    return { identifiedBy: 'request', subscriber, identifier };
  };
}
