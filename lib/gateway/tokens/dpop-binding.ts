import type { DpopHashClaim } from '../options.js';

/** The CAMARA profile's DPoP hash claims (`DpopHashClaim`), in the order they are checked and announced. */
export const DPOP_HASH_CLAIMS: readonly DpopHashClaim[] = ['camara:qh', 'camara:bh'];

/** An option naming required hash claims, checked at start-up: the list, without repeats. */
export function dpopClaimsOption(value: unknown, path: string): readonly DpopHashClaim[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => !DPOP_HASH_CLAIMS.includes(v as DpopHashClaim)))
    throw new TypeError(`${path} must be a list of 'camara:qh' (query hash) and 'camara:bh' (body hash)`);
  return DPOP_HASH_CLAIMS.filter((claim) => value.includes(claim));
}

export interface RequestBinding {
  /** Claims every proof must carry here (the gateway's `dpopClaimsRequired`, and the route's). */
  required: readonly DpopHashClaim[];
  /** The raw query string, after `?` and as received; empty when the request has none. */
  query: string;
  /** The hash of the body's bytes: only asked when the proof carries `camara:bh` or it is required. */
  bodyHash: () => Promise<string>;
}

/** The query of a request target (`req.originalUrl`), exactly as received: what `camara:qh` hashes. */
export function rawQuery(target: string): string {
  const start = target.indexOf('?');
  if (start < 0) return '';
  const end = target.indexOf('#', start);
  return target.slice(start + 1, end < 0 ? undefined : end);
}

export { sha256Of } from '../../crypto.js';

/** Thrown when the body's bytes are gone (a parser read them first), so `camara:bh` cannot be checked. */
export class BodyAlreadyReadError extends Error {
  /** Stable identifier for handlers and logs; the message may change. */
  readonly code = 'NETAUTH_DPOP_BODY_ALREADY_READ';

  constructor(where: string) {
    super(
      `camara:bh cannot be checked: the request body was read before ${where}; ` +
        'mount it before any body parser of the route (it parses a JSON body itself)',
    );
    this.name = 'BodyAlreadyReadError';
  }
}
