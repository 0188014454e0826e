import type { Request } from 'express';
import { OAuthError } from '../errors.js';
import { hasBody } from '../gateway/http/read-params.js';
import { bodyUnreadable, readBody } from '../gateway/http/read-body.js';

/**
 * The guard's JSON bodies (a DPoP proof's `camara:bh`, CAMARA device identification), read through the router's
 * reader (content codings, the size limit, draining on failure) and parsed as `express.json()` would parse them,
 * so a route that runs no parser of its own gets `req.body` as it would with one.
 */

/** `application/json`, as express.json() reads by default. */
export function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/** JSON's charset (RFC 8259 §8.1): UTF-8; another declared one is 415, as body-parser answers it. */
function checkCharset(contentType: string | undefined): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    throw new OAuthError('invalid_request', `unsupported charset ${charset.slice(0, 20)}`, { status: 415 });
}

/**
 * A JSON body's value as express.json() (strict) gives it: an object or an array, `{}` for an empty body;
 * anything else is unreadable (400).
 */
export function parseJson(bytes: Buffer): unknown {
  const decoded = bytes.toString('utf8');
  const text = (decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded).trim();
  if (text === '') return {};
  if (!text.startsWith('{') && !text.startsWith('[')) throw bodyUnreadable();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw bodyUnreadable();
  }
}

/**
 * A JSON request's body, into `req.body`: undefined (and nothing read) when the request has no body or another
 * media type, as with express.json(). At most `maxBytes` after decoding (413 past it).
 */
export async function readJsonBody(req: Request, maxBytes: number): Promise<unknown> {
  const contentType = req.headers['content-type'];
  if (!hasBody(req) || !isJson(contentType)) return undefined;
  // Read to its end first, so the client reads the answer rather than a reset.
  const bytes = await readBody(req, maxBytes);
  checkCharset(contentType);
  req.body = parseJson(bytes);
  return req.body as unknown;
}
