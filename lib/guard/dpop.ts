import type { Request, Response } from 'express';
import { OAuthError } from '../errors.js';
import { DPOP_LIMITED, DpopProofRejectedError, dpopProofOf, verifyDpopProof } from '../gateway/tokens/dpop.js';
import { overLimit, type RateLimits } from '../ops/rate-limits.js';
import type { EventHub } from '../ops/events.js';
import type { Store } from '../stores/store.js';
import { rawQuery } from '../gateway/tokens/dpop-binding.js';
import type { DpopHashClaim } from '../gateway/options.js';
import type { BodyHashReader } from './body-hash.js';
import type { AuthScheme } from './responses.js';

/**
 * The URL a request was sent to, as its DPoP proof's `htu` must name it: the service API's public origin (the
 * issuer's unless the guard is told otherwise) and the path as received. Never the Host or X-Forwarded-* headers,
 * which the sender of the request chooses.
 */
export function resourceUrl(origin: string, req: Request): string {
  const url = req.originalUrl;
  const query = url.search(/[?#]/);
  // Concatenated, not resolved: a path such as `//elsewhere/x` stays a path of this origin.
  return `${origin}${query < 0 ? url : url.slice(0, query)}`;
}

/** What checking a bound token's proof uses: the store (the proof's `jti`, once), the clock, the limits, the events. */
export interface SenderConstraintCollaborators {
  store: Store;
  now: () => number;
  /** `rateLimits.dpopProofs`: undefined with `rateLimits: false`. */
  limits: RateLimits | undefined;
  events: EventHub;
}

function refused(description: string): OAuthError {
  return new OAuthError('invalid_dpop_proof', description, { status: 401 });
}

/**
 * RFC 9449 §7: a token bound to a DPoP key (`jkt`) passes only with the DPoP scheme and a proof for this request
 * (method, URL, `ath`) made with that key, its `jti` used once. The same token presented as Bearer is refused
 * (§7.2), and so is an unbound token presented with the DPoP scheme (§7.1: it is bound to no key the proof could
 * match). An unbound token presented as Bearer passes whether or not a proof came with it. The proof's
 * `camara:qh` / `camara:bh` are checked when present, and must be present when `binding.required` names them.
 * A proof whose key or client is over `rateLimits.dpopProofs` is 429 with `Retry-After`, reported as `rate.limited`.
 */
export async function checkSenderConstraint(
  ctx: SenderConstraintCollaborators,
  req: Request,
  presented: { scheme: AuthScheme; token: string },
  { jkt, clientId }: { jkt: string | undefined; clientId: string },
  origin: string,
  binding: { required: readonly DpopHashClaim[]; bodyHash: BodyHashReader; res: Response },
): Promise<void> {
  if (jkt === undefined) {
    if (presented.scheme === 'DPoP')
      throw new OAuthError('invalid_token', 'the access token is not DPoP-bound: present it with the Bearer scheme');
    return;
  }
  if (presented.scheme === 'Bearer')
    throw new OAuthError(
      'invalid_token',
      'the access token is DPoP-bound: present it with the DPoP scheme and a DPoP proof',
    );
  try {
    const proof = dpopProofOf(req);
    if (proof === undefined) throw refused('a DPoP proof is required with this access token');
    await verifyDpopProof({ store: ctx.store, nowMs: ctx.now(), limits: ctx.limits, clientId }, proof, {
      method: req.method,
      url: resourceUrl(origin, req),
      accessToken: presented.token,
      jkt,
      binding: {
        required: binding.required,
        query: rawQuery(req.originalUrl),
        bodyHash: () => binding.bodyHash(req, binding.res),
      },
    });
  } catch (error) {
    if (!(error instanceof DpopProofRejectedError)) throw error;
    const { limited } = error;
    if (limited !== undefined) {
      const event = { endpoint: 'guard', clientId, ...limited } as const;
      throw overLimit(ctx.events, event, DPOP_LIMITED[limited.limit]);
    }
    throw refused(`the DPoP proof was refused: ${error.reason}`);
  }
}
