import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Request } from 'express';
import { OAuthError } from '../../errors.js';

export function bodyTooLarge(): OAuthError {
  return new OAuthError('invalid_request', 'request body too large', { status: 413 });
}

export function bodyUnreadable(): OAuthError {
  return new OAuthError('invalid_request', 'request body could not be read');
}

/** The content codings a form may arrive in (RFC 9110 §8.4.1), as body-parser reads them: decoded, then limited. */
const DECODERS = new Map<string, (() => Transform) | undefined>([
  ['identity', undefined],
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

/**
 * A request's body, to its end, as bytes: at most `limit` of them after content decoding (413 past it), chunked
 * or with a Content-Length. An unknown or stacked coding, or a body its coding cannot decode, is unreadable (400).
 * On a failure the rest of the body is drained before the answer, so the client reads it rather than a reset;
 * a body declared too large is refused at once. A connection that goes before the body ends leaves nobody to
 * answer: the promise then settles unreadable and the response is already closed.
 */
export function readBody(req: Request, limit: number): Promise<Buffer> {
  const coding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (!DECODERS.has(coding)) return drained(req, bodyUnreadable());
  const transform = DECODERS.get(coding)?.();
  const declared = req.headers['content-length'];
  if (!transform && declared !== undefined && Number(declared) > limit) return drained(req, bodyTooLarge());
  const source: Readable = transform ? req.pipe(transform) : req;
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const settle = (error: OAuthError | undefined): void => {
      source.removeListener('data', onData);
      source.removeListener('end', onEnd);
      source.removeListener('error', onError);
      req.removeListener('aborted', onAborted);
      if (error === undefined) {
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
        return;
      }
      if (transform) {
        req.unpipe(transform);
        transform.destroy();
      }
      drained(req, error).then(undefined, reject);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limit) settle(bodyTooLarge());
      else chunks.push(chunk);
    };
    const onEnd = (): void => settle(undefined);
    const onError = (): void => settle(bodyUnreadable());
    const onAborted = (): void => settle(bodyUnreadable());
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/** Rejects with `error` once the request's body has been read to its end (or the connection has gone). */
function drained(req: Request, error: OAuthError): Promise<never> {
  return new Promise<never>((_resolve, reject) => {
    if (req.readableEnded || req.destroyed) {
      reject(error);
      return;
    }
    const done = (): void => {
      req.removeListener('end', done);
      req.removeListener('close', done);
      reject(error);
    };
    req.on('end', done);
    req.on('close', done);
    req.resume();
  });
}
