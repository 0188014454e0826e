import express, { type Request, type RequestHandler, type Response } from 'express';
import { hasBody, bodyError } from '../gateway/http/read-params.js';
import { BodyAlreadyReadError, sha256Of } from '../gateway/tokens/dpop-binding.js';

/** The hash of a request's body, read for a DPoP proof's `camara:bh`. */
export type BodyHashReader = (req: Request, res: Response) => Promise<string>;

function run(parser: RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => {
    void parser(req, res, (error?: unknown) => (error === undefined || error === null ? resolve() : reject(error)));
  });
}

/**
 * `camara:bh` is the SHA-256 of the body's bytes, which a parser does not keep: the guard reads the body itself
 * (`limit` bytes at most) before the route's parser could. A JSON body is parsed into `req.body` as
 * `express.json()` would; any other body is left there as a Buffer. A body read before the guard cannot be
 * hashed: that is the route's configuration to fix (BodyAlreadyReadError), not the client's fault.
 */
export function bodyHashReader(limit: string | number): BodyHashReader {
  return async (req, res) => {
    if (!hasBody(req)) return sha256Of(Buffer.alloc(0));
    if (req.body !== undefined || req.readableEnded) throw new BodyAlreadyReadError('the guard');
    let bytes: Buffer | undefined;
    const keep = (_req: unknown, _res: unknown, buffer: Buffer): void => {
      bytes = buffer;
    };
    try {
      await run(express.json({ limit, verify: keep }), req, res);
      // Not JSON: the bytes as they are.
      if (bytes === undefined) await run(express.raw({ limit, type: () => true, verify: keep }), req, res);
    } catch (error) {
      throw bodyError(error) ?? error;
    }
    return sha256Of(bytes ?? Buffer.alloc(0));
  };
}
