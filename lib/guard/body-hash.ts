import type { Request, Response } from 'express';
import { hasBody, sizeLimit } from '../gateway/http/read-params.js';
import { bodyUnreadable, readBody } from '../gateway/http/read-body.js';
import { BodyAlreadyReadError, sha256Of } from '../gateway/tokens/dpop-binding.js';

/** The hash of a request's body, read for a DPoP proof's `camara:bh`. */
export type BodyHashReader = (req: Request, res: Response) => Promise<string>;

/** `application/json`, as express.json() reads by default. */
function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/**
 * `camara:bh` is the SHA-256 of the body's bytes, which a parser does not keep: the guard reads the body itself
 * (`limit` bytes at most, after content decoding, through the router's reader) before the route's parser could. A
 * JSON body is parsed into `req.body` as `express.json()` would (an object or an array; anything else is a bad
 * request); any other body is left there as a Buffer. A body read before the guard cannot be hashed: that is the
 * route's configuration to fix (BodyAlreadyReadError), not the client's fault.
 */
export function bodyHashReader(limit: string | number): BodyHashReader {
  const maxBytes = sizeLimit(limit);
  return async (req) => {
    if (!hasBody(req)) return sha256Of(Buffer.alloc(0));
    if (req.body !== undefined || req.readableEnded) throw new BodyAlreadyReadError('the guard');
    const bytes = await readBody(req, maxBytes);
    if (isJson(req.headers['content-type'])) {
      const text = bytes.toString('utf8').trim();
      if (text === '') req.body = {};
      else if (!text.startsWith('{') && !text.startsWith('[')) throw bodyUnreadable();
      else {
        try {
          req.body = JSON.parse(text) as unknown;
        } catch {
          throw bodyUnreadable();
        }
      }
    } else {
      req.body = bytes;
    }
    return sha256Of(bytes);
  };
}
