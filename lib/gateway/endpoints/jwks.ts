import type { RequestHandler } from 'express';
import type { KeySet } from '../tokens/keys.js';

/**
 * GET /jwks: the public halves of the signing keys (resolveKeySet exports only those), cacheable. Always served, as
 * discovery always names it (OIDC Discovery §3): an empty set where nothing is signed.
 */
export function jwksEndpoint(keys: KeySet | undefined): RequestHandler {
  const document = JSON.stringify(keys?.jwks ?? { keys: [] });
  return (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('application/jwk-set+json').send(document);
  };
}
