import type { VerifiedAccessToken } from '../gateway/tokens/jwt-access-tokens.js';

/** How many verified JWT access tokens a gateway remembers (about 1.5 KB each). */
export const VERIFIED_ACCESS_TOKENS_KEPT = 10_000;

/**
 * How much of a token's end is its key here: a JWS ends with its signature, and 43 characters of one (256 bits)
 * tell tokens apart, so a lookup hashes those rather than the whole token (about 1,000 characters for RS256).
 */
const KEY_LENGTH = 43;

interface Kept {
  /** The exact text: only a token equal to it is answered from here. */
  token: string;
  verified: VerifiedAccessToken;
}

/**
 * JWT access tokens this gateway has verified, by their exact text, until they expire: a client calls its APIs
 * many times with one token, and what its signature and claims say cannot change while the local key set stays
 * the same (it does for the life of the process). A token is checked again against the clock on every call;
 * revocation, single use and sender constraints are the guard's to check on every call as before. Only tokens
 * that verified are kept, so nobody can fill this with tokens they made up; when full, the oldest goes first.
 */
export class VerifiedAccessTokens {
  private readonly kept = new Map<string, Kept>();

  constructor(
    private readonly now: () => number,
    private readonly limit = VERIFIED_ACCESS_TOKENS_KEPT,
  ) {}

  /** What `token` grants, verified once by `verify` and remembered until its `exp` (whole seconds, as verified). */
  find(token: string, verify: (token: string) => VerifiedAccessToken | undefined): VerifiedAccessToken | undefined {
    const key = token.slice(-KEY_LENGTH);
    const known = this.kept.get(key);
    // Another token with the same end is not this one: it is verified, and replaces the one kept.
    if (known !== undefined && known.token === token) {
      if (known.verified.expiresAt / 1000 > Math.floor(this.now() / 1000)) return known.verified;
      this.kept.delete(key);
      return undefined;
    }
    const verified = verify(token);
    if (verified === undefined) return undefined;
    if (known === undefined && this.kept.size >= this.limit) {
      const oldest = this.kept.keys().next();
      if (!oldest.done) this.kept.delete(oldest.value);
    }
    // Shared by every call with this token: frozen, so no service API can change what the next call sees.
    Object.freeze(verified.scopes);
    Object.freeze(verified.grantIds);
    this.kept.set(key, { token, verified: Object.freeze(verified) });
    return verified;
  }
}
