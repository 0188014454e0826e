import type { RequestHandler } from 'express';
import type { KeySet } from '../tokens/keys.js';

/** GET /jwks: the public halves of the signing keys (resolveKeySet exports only those), cacheable. */
export function jwksEndpoint(keys: KeySet): RequestHandler {
  return (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('application/jwk-set+json').send(JSON.stringify(keys.jwks));
  };
}
