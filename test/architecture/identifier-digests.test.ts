import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Issue 42, "no unkeyed digest of an identifier leaves the gateway": every file of lib/ that computes a digest,
 * and what it digests. A new one fails here until it is added with its reason, so a digest of a subscriber or
 * client id cannot reach a client unseen. What clients actually receive is checked over HTTP by
 * test/gateway/tokens/client-visible-values.test.ts. The same search by hand (docs/security.md):
 *
 *   grep -rnE "sha256\(|sha256Bytes\(|sha256Of\(|hashedRecordId\(|createHash\(|createHmac\(|hkdfSync\(" lib
 */
const DIGEST = /\b(?:sha256|sha256Bytes|sha256Of|hashedRecordId|createHash|createHmac|hkdfSync)\(/;

const REVIEWED: Record<string, string> = {
  'lib/crypto.ts': 'the primitives themselves',
  'lib/stores/session-store.ts': "store id of the consent page's random session id",
  'lib/stores/redis-scripts.ts': "SHA-1 of a Lua script's source (EVALSHA)",
  'lib/ops/rate-limits.ts': 'counter key of an id longer than 128 characters: in Redis only, never in a response',
  'lib/gateway/tokens/redemptions.ts':
    'one-step KDF (SHA-256) of the code, auth_req_id or refresh token the client presented and a random salt: the opaque tokens issued for it (keyed by the salt, which only the store holds), or the key that seals a JWT',
  'lib/registry/secret-history.ts':
    'HMAC under a random per-process key of (client id, registered hash, secret): in memory only, never in a response',
  'lib/ops/event-source.ts': 'HMAC-SHA-256 of a network prefix, keyed from pairwiseSalt: events only',
  'lib/gateway/grants/authorization-code.ts': "PKCE: the client's verifier; store id of a random code",
  'lib/gateway/grants/ciba.ts': 'store id of a random auth_req_id',
  'lib/gateway/http/read-params.ts': "the request body's hash for DPoP camara:bh",
  'lib/gateway/client-auth/client-jwt.ts': "store id of a client JWT's jti: in the store only",
  'lib/gateway/requests/backchannel-requests.ts': 'store id of a random auth_req_id',
  'lib/gateway/requests/consent-notifications.ts':
    'store id of a (client, subscriber, purpose, scope) tuple: in the store only',
  'lib/gateway/requests/authorization-codes.ts': 'store id of a random code',
  'lib/gateway/tokens/dpop.ts': "a proof's ath and camara:qh, of what the client sent",
  'lib/gateway/tokens/id-tokens.ts': 'at_hash / c_hash of a random token or code',
  'lib/gateway/tokens/access-tokens.ts': 'store id of a random token',
  'lib/gateway/tokens/sealed-subscriber.ts': "the seal's key, HKDF from the signing key (the id is encrypted, padded)",
  'lib/gateway/tokens/keys.ts': "kid: the RFC 7638 thumbprint of the gateway's own public key",
  'lib/identity/pairwise-subject.ts':
    'pairwise sub: SHA-256 over client id, subscriber id and the secret pairwiseSalt (keyed)',
  'lib/gateway/endpoints/consent-page.ts': 'constant-time comparison of two values',
  'lib/gateway/endpoints/consents-page.ts': 'constant-time comparison of two values',
  'lib/registry/clients.ts': 'client secrets, compared and cached: never sent',
  'lib/consent/confirmation.ts': 'HMAC of a confirmation code under a random salt: in the store only',
  'lib/consent/records.ts':
    "store placement of a client's consent records for a subscriber: in the store only (grant ids are random)",
  'lib/consent/evidence.ts':
    "SHA-256 of the consent page's text (the notice shown: application name, purpose, scopes), no identifier of the subscriber",
  'lib/guard/body-hash.ts': 'SHA-256 of request bytes (camara:bh)',
};

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('digests in lib/ (issue 42)', () => {
  it('every file that computes one is reviewed: none hands a client an unkeyed digest of an identifier', () => {
    const root = new URL('../../', import.meta.url).pathname;
    const found = files(join(root, 'lib'))
      .filter((path) =>
        readFileSync(path, 'utf8')
          .split('\n')
          // Comments may name the functions.
          .some((line) => !/^\s*(\*|\/\/)/.test(line) && DIGEST.test(line)),
      )
      .map((path) => relative(root, path).split('\\').join('/'))
      .sort();
    expect(found).toEqual(Object.keys(REVIEWED).sort());
  });
});
