import type { Request } from 'express';
import { OAuthError } from '../../errors.js';

/**
 * The parameters of a request, its form body or its query, read by docs/protocol.md's wire rules: a parameter
 * sent twice is invalid_request, an empty value counts as absent, unknown parameters are ignored.
 */
export class FormParams {
  constructor(private readonly body: Record<string, unknown>) {}

  get(name: string): string | undefined {
    if (!Object.hasOwn(this.body, name)) return undefined;
    const value = this.body[name];
    if (Array.isArray(value)) throw new OAuthError('invalid_request', `${name} must not be sent more than once`);
    if (typeof value !== 'string' || value === '') return undefined;
    return value;
  }

  require(name: string): string {
    const value = this.get(name);
    if (value === undefined) throw new OAuthError('invalid_request', `${name} is required`);
    return value;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }
}

/**
 * Most parameters one request may carry, in its query or its form body. No endpoint reads more than about a
 * dozen; the limit bounds the work of reading a request whatever it holds (a 16 KB request line is ~8,000
 * parameters). Past it the request is a bad one: 400 invalid_request (a body over the size limit stays 413).
 */
export const MAX_PARAMETERS = 100;

export function tooManyParameters(): OAuthError {
  return new OAuthError('invalid_request', `more than ${MAX_PARAMETERS} parameters`);
}

/**
 * A form-encoded component (RFC 6749 Appendix B, HTML's urlencoded): `+` is a space, then percent-decoding.
 * Undefined when its escapes are not valid UTF-8.
 */
export function formDecode(value: string): string | undefined {
  // Most components have nothing to decode.
  if (!value.includes('%') && !value.includes('+')) return value;
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** A component of an ISO-8859-1 form: `+` is a space, each escape one byte (body-parser's qs, its `charset`). */
function latin1Decode(value: string): string {
  return value
    .replace(/\+/g, ' ')
    .replace(/%[0-9a-f]{2}/gi, (byte) => String.fromCharCode(Number.parseInt(byte.slice(1), 16)));
}

/** A UTF-8 component as body-parser (qs) decodes it: one whose escapes are not valid UTF-8 is kept as sent, `+` a space. */
function utf8Decode(value: string): string {
  return formDecode(value) ?? value.replace(/\+/g, ' ');
}

/**
 * An `application/x-www-form-urlencoded` body, with the values body-parser gives with `extended: false`: one step per
 * character, a repeated name becomes an array (which FormParams refuses), names are taken as they are, a
 * byte-order mark is dropped, more than MAX_PARAMETERS `&`-separated parts is invalid_request.
 */
export function parseForm(body: Buffer, charset: 'utf-8' | 'iso-8859-1'): FormParams {
  const decoded = charset === 'utf-8' ? body.toString('utf8') : body.toString('latin1');
  const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
  const decode = charset === 'utf-8' ? utf8Decode : latin1Decode;
  const values: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  if (text === '') return new FormParams(values);
  // One split, stopped one part past the limit, then each part searched within itself: linear in the body.
  const parts = text.split('&', MAX_PARAMETERS + 1);
  if (parts.length > MAX_PARAMETERS) throw tooManyParameters();
  for (const part of parts) {
    if (part === '') continue;
    const equals = part.indexOf('=');
    const name = decode(equals >= 0 ? part.slice(0, equals) : part);
    if (name === '') continue;
    const value = equals >= 0 ? decode(part.slice(equals + 1)) : '';
    const previous = values[name];
    if (previous === undefined) values[name] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else values[name] = [previous, value];
  }
  return new FormParams(values);
}

/**
 * Query parameters by the same wire rules. Read from the raw URL rather than `req.query`, so the app's
 * `query parser` setting (e.g. qs with nested objects) cannot change what the endpoint sees.
 */
export function queryParams(req: Request): FormParams {
  // Only the query is parsed: `new URL(originalUrl, base)` threw on absolute-form targets with an authority
  // WHATWG refuses (`GET http://x:99999/authorize?...`), a 500 for bad input. URLSearchParams never throws.
  const url = req.originalUrl;
  const start = url.indexOf('?');
  const end = url.indexOf('#', start);
  const search = new URLSearchParams(start < 0 ? '' : url.slice(start + 1, end < 0 ? undefined : end));
  const values: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  let count = 0;
  for (const [name, value] of search) {
    if (++count > MAX_PARAMETERS) throw tooManyParameters();
    // A repeat is only ever refused (FormParams.get), so it is appended in place: one step per parameter.
    const previous = values[name];
    if (previous === undefined) values[name] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else values[name] = [previous, value];
  }
  return new FormParams(values);
}
