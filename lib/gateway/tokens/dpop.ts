import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import { EmbeddedJWK, calculateJwkThumbprint, errors, jwtVerify, type JWK, type JWTPayload } from 'jose';
import { sha256 } from '../../crypto.js';
import { OAuthError } from '../../errors.js';
import { CLIENT_SIGNING_ALGORITHMS, type RegisteredClient } from '../../registry/clients.js';
import { PRIVATE_MEMBERS } from '../../registry/client-jwks.js';
import type { Store } from '../../stores/store.js';
import type { DpopProofLimitHit, RateLimits } from '../../ops/rate-limits.js';
import type { RateLimitedEvent } from '../../ops/events.js';
import { jtiRecordId, useJtiOnce } from '../client-auth/client-jwt.js';
import { proofKeyRefusal } from './dpop-proof-key.js';
import { BodyAlreadyReadError, DPOP_HASH_CLAIMS, rawQuery, type RequestBinding } from './dpop-binding.js';
import type { DpopHashClaim } from '../options.js';

/**
 * DPoP proofs (RFC 9449 §4): checked at the token endpoint (the token is then bound to the proof's key) and by
 * the guard (the proof must be made with the key the token is bound to). Every check is jose's or §4.3's;
 * server nonces (§8, optional) are not used: `iat` within a window and single-use `jti`s bound freshness.
 */

/** Algorithms a proof may be signed with: the asymmetric set client assertions use (never `none` or HS*). */
export const DPOP_ALGORITHMS: readonly string[] = CLIENT_SIGNING_ALGORITHMS;
/** RFC 9449 §11.1, CAMARA: a proof's `iat` may be this many seconds from the server's clock, either way. */
export const DPOP_IAT_WINDOW = 300;
/** Far above any honest proof (an RSA-4096 `jwk` is under 1 KB), so a hostile header costs little to refuse. */
const MAX_PROOF_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * A proof failed a check. `reason` is for error descriptions: it never quotes the proof or its claims.
 * `limited`: the proof was good but its key or its client is over `rateLimits.dpopProofs`, a rate limit its
 * caller reports and answers as its other limits.
 */
export class DpopProofRejectedError extends Error {
  /** Stable identifier for handlers and logs; the message may change. */
  readonly code = 'NETAUTH_DPOP_PROOF_REJECTED';

  constructor(
    readonly reason: string,
    readonly limited?: DpopProofLimitHit,
  ) {
    super(reason);
    this.name = 'DpopProofRejectedError';
  }
}

/** What a proof over `rateLimits.dpopProofs` is told, at the token endpoint and the guard. */
export const DPOP_LIMITED: Readonly<Record<DpopProofLimitHit['limit'], string>> = {
  dpop_key: 'too many DPoP proofs of this key; retry later',
  dpop_client: "too many DPoP proofs of this client's keys; retry later",
};

/** What the proof must match: this request (§4.3 checks 8, 9) and, at a resource, the token it comes with (check 12). */
export interface DpopRequest {
  method: string;
  /** The request's URL as its sender addressed it; query and fragment are ignored. */
  url: string;
  /** At a protected resource: the access token presented with the proof (`ath`). */
  accessToken?: string;
  /** At a protected resource: the thumbprint of the key the token is bound to; the proof's key must be that one. */
  jkt?: string;
  /** The CAMARA binding of the request's query and body: checked when the proof carries it, or required. */
  binding?: RequestBinding;
}

/** `camara:qh` and `camara:bh` (when present or required) match the request's query and body. */
async function checkBinding(payload: JWTPayload, binding: RequestBinding): Promise<void> {
  for (const claim of DPOP_HASH_CLAIMS) {
    const value = payload[claim];
    if (value === undefined) {
      if (binding.required.includes(claim)) throw new DpopProofRejectedError(`it has no ${claim} claim, required here`);
      continue;
    }
    const part = claim === 'camara:qh' ? 'query' : 'body';
    const expected = claim === 'camara:qh' ? sha256(binding.query) : await binding.bodyHash();
    if (typeof value !== 'string' || value !== expected)
      throw new DpopProofRejectedError(`its ${claim} is not the hash of the request's ${part}`);
  }
}

/**
 * Where a proof is checked: the store its `jti` is recorded in, the clock, the limits (if any), and the client
 * whose allowance it counts in (the authenticated client at the token endpoint, the token's at a guard).
 */
export interface DpopVerifier {
  store: Store;
  nowMs: number;
  /** `rateLimits.dpopProofs`: undefined with `rateLimits: false`. */
  limits: RateLimits | undefined;
  clientId: string;
}

/**
 * The request's DPoP header: undefined when none was sent. More than one (§4.3 check 1) or an empty one is a
 * proof that cannot be valid.
 */
export function dpopProofOf(req: IncomingMessage): string | undefined {
  // headersDistinct builds an array for every header of the request on first use: only asked when a proof came.
  if (req.headers.dpop === undefined) return undefined;
  const values = req.headersDistinct.dpop;
  if (values === undefined) return undefined;
  if (values.length !== 1) throw new DpopProofRejectedError('more than one DPoP header was sent');
  return values[0]!;
}

/**
 * `htu` as compared (§4.3 check 9): scheme, host, port and path, without query and fragment, after the URL
 * parser's syntax- and scheme-based normalisation (RFC 3986 §6.2.2, §6.2.3: case, default port, dot segments).
 */
export function normalizeHtu(value: string): string | undefined {
  if (!URL.canParse(value)) return undefined;
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  return `${url.origin}${url.pathname}`;
}

/** Why jose refused the proof, in words that reveal nothing of its content. */
function reasonOf(error: unknown): string {
  if (error instanceof errors.JOSEAlgNotAllowed) return 'its alg is not an accepted asymmetric algorithm';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'its signature does not verify with its jwk';
  if (error instanceof errors.JWTExpired) return 'it has expired';
  if (error instanceof errors.JWTClaimValidationFailed)
    return error.claim === 'typ' ? 'its typ is not dpop+jwt' : `its ${error.claim} claim is missing or wrong`;
  if (error instanceof errors.JWSInvalid) return 'its jwk header is missing, not a public key, or does not fit its alg';
  if (error instanceof errors.JOSENotSupported) return 'its key type or alg is not supported';
  return 'it is not a valid signed JWT';
}

function protectedHeaderOf(proof: string): Record<string, unknown> | undefined {
  try {
    const header: unknown = JSON.parse(Buffer.from(proof.slice(0, proof.indexOf('.')), 'base64url').toString('utf8'));
    return header !== null && typeof header === 'object' && !Array.isArray(header)
      ? (header as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Verifies a DPoP proof for `request` (RFC 9449 §4.3) and marks its `jti` used, per key, until the proof could no
 * longer pass the `iat` window (the store's atomic `add`: of concurrent uses exactly one wins, on every store), at
 * most so many per key and per client (`rateLimits.dpopProofs`). Resolves with the JWK SHA-256 thumbprint of the
 * proof's key (RFC 7638), the `jkt` a token is bound to.
 */
export async function verifyDpopProof(
  { store, nowMs, limits, clientId }: DpopVerifier,
  proof: string,
  request: DpopRequest,
): Promise<string> {
  if (proof.length > MAX_PROOF_LENGTH || !COMPACT_JWS.test(proof))
    throw new DpopProofRejectedError('it is not a compact JWS');
  const jwk = protectedHeaderOf(proof)?.jwk;
  // §4.2: the jwk header is a public key. jose refuses a private one too; this says why.
  if (jwk !== null && typeof jwk === 'object' && PRIVATE_MEMBERS.some((member) => member in jwk)) {
    throw new DpopProofRejectedError('its jwk holds private key material');
  }
  // Before the signature: the proof chooses its key, so an expensive one is refused without using it.
  const refusal = jwk !== null && typeof jwk === 'object' ? proofKeyRefusal(jwk as Record<string, unknown>) : undefined;
  if (refusal !== undefined) throw new DpopProofRejectedError(refusal);
  let payload: JWTPayload;
  let key: JWK;
  try {
    const verified = await jwtVerify(proof, EmbeddedJWK, {
      typ: 'dpop+jwt',
      algorithms: [...DPOP_ALGORITHMS],
      requiredClaims: ['jti', 'htm', 'htu', 'iat'],
      currentDate: new Date(nowMs),
    });
    payload = verified.payload;
    key = verified.protectedHeader.jwk as JWK;
  } catch (error) {
    // No cause: jose's claim errors carry the whole payload.
    throw new DpopProofRejectedError(reasonOf(error));
  }
  const { iat, jti, htm, htu, ath } = payload as {
    iat: number;
    jti: unknown;
    htm: unknown;
    htu: unknown;
    ath: unknown;
  };
  const now = nowMs / 1000;
  if (Math.abs(now - iat) > DPOP_IAT_WINDOW)
    throw new DpopProofRejectedError(`its iat is more than ${DPOP_IAT_WINDOW} s from the server's clock`);
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH)
    throw new DpopProofRejectedError('its jti claim is missing or wrong');
  if (htm !== request.method) throw new DpopProofRejectedError('its htm is not the method of this request');
  const expected = normalizeHtu(request.url);
  if (typeof htu !== 'string' || expected === undefined || normalizeHtu(htu) !== expected) {
    throw new DpopProofRejectedError('its htu is not the URL of this request');
  }
  // sha256() is base64url without padding: the §4.2 encoding of ath.
  if (request.accessToken !== undefined && ath !== sha256(request.accessToken)) {
    throw new DpopProofRejectedError('its ath is not the hash of the access token');
  }
  if (request.binding !== undefined) await checkBinding(payload, request.binding);
  const jkt = await calculateJwkThumbprint(key, 'sha256');
  if (request.jkt !== undefined && jkt !== request.jkt)
    throw new DpopProofRejectedError('it is not signed with the key the access token is bound to');
  // Namespaced by key: only the key's holder can make a proof, so no one else can use up its jtis.
  const namespace = `dpop:${jkt}`;
  if (!(await useJtiOnce(store, namespace, jti, iat + DPOP_IAT_WINDOW, nowMs)))
    throw new DpopProofRejectedError('its jti has been used before');
  // Counted once its entry is written: a replay, which anyone who saw the proof can send, never counts; a fresh
  // proof only the key's holder can make. Over the limit the entry goes again, so refused proofs leave none.
  const limited = await limits?.dpopProof(jkt, clientId);
  if (limited !== undefined) {
    await store.delete('jti', jtiRecordId(namespace, jti));
    throw new DpopProofRejectedError(DPOP_LIMITED[limited.limit], limited);
  }
  return jkt;
}

/**
 * Whether a token request has a DPoP binding to settle: a proof was sent, or the client must send one
 * (`dpopBoundAccessTokens`). Otherwise `tokenRequestBinding` would answer unbound, and is not called.
 */
export function dpopBindingAsked(req: Request, client: RegisteredClient): boolean {
  return req.headers.dpop !== undefined || client.dpopBoundAccessTokens === true;
}

/** What the token endpoint's DPoP check uses: the issuer (`htu`), the claims required, the clock, store and limits. */
export interface TokenRequestProofs {
  issuer: string;
  dpopClaimsRequired: readonly DpopHashClaim[];
  now: () => number;
  store: Store;
  limits: RateLimits | undefined;
}

/**
 * The token endpoint's side (RFC 9449 §5, the CAMARA profile's table), the same for every grant: a valid proof
 * binds the token whoever the client is (the `jkt` to bind to is returned); a request without one is served
 * unbound, unless the client is registered with `dpopBoundAccessTokens`; a proof that fails is 400
 * `invalid_dpop_proof`. `htu` is the token endpoint as discovery publishes it (issuer-based), never a URL built
 * from the request's Host or X-Forwarded-* headers. `bodyHash`: of the form body's bytes, when the router read
 * them (undefined when the application's parser did). A key over its limit is answered by `overLimit`, as the
 * grant answers the client's limit.
 */
export async function tokenRequestBinding(
  ctx: TokenRequestProofs,
  req: Request,
  client: RegisteredClient,
  bodyHash: string | undefined,
  overLimit: (event: RateLimitedEvent, description: string) => OAuthError,
): Promise<string | undefined> {
  try {
    const proof = dpopProofOf(req);
    if (proof === undefined) {
      if (client.dpopBoundAccessTokens === true)
        throw new OAuthError('invalid_dpop_proof', 'this client must send a DPoP proof (dpop_bound_access_tokens)');
      return undefined;
    }
    const binding: RequestBinding = {
      required: ctx.dpopClaimsRequired,
      query: rawQuery(req.originalUrl),
      bodyHash: () => {
        if (bodyHash === undefined) throw new BodyAlreadyReadError("express-netauth's router");
        return Promise.resolve(bodyHash);
      },
    };
    const verifier = { store: ctx.store, nowMs: ctx.now(), limits: ctx.limits, clientId: client.clientId };
    return await verifyDpopProof(verifier, proof, {
      method: req.method,
      url: `${ctx.issuer}/token`,
      binding,
    });
  } catch (error) {
    if (!(error instanceof DpopProofRejectedError)) throw error;
    const { limited } = error;
    if (limited !== undefined) {
      const event: RateLimitedEvent = { endpoint: 'token', clientId: client.clientId, ...limited };
      throw overLimit(event, DPOP_LIMITED[limited.limit]);
    }
    throw new OAuthError('invalid_dpop_proof', `the DPoP proof was refused: ${error.reason}`);
  }
}
