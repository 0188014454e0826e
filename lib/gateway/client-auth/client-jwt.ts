import { errors, jwtVerify, type JWTPayload } from 'jose';
import { sha256 } from '../../crypto.js';
import { CLIENT_SIGNING_ALGORITHMS, type RegisteredClient } from '../../registry/clients.js';
import type { Store } from '../../stores/store.js';
import { type ClientKeys, ClientKeysUnavailableError } from './client-keys.js';

/** The CAMARA profile's window: `exp` at most this many seconds after receipt, and after `iat`. */
export const MAX_JWT_LIFETIME = 300;
/** Seconds a used `jti` is remembered beyond its JWT's `exp`: the store's margin. */
export const CLOCK_SKEW = 5;

/** Seconds a client's clock may run ahead of the gateway's. */
export interface ClockTolerance {
  /** For `nbf` (jose's `clockTolerance`). */
  clockTolerance: number;
  /** For `iat`: 0 under the CAMARA preset. */
  iat: number;
}

/** What a JWT signed by a client must satisfy besides its signature, `iss` = client_id, `exp` and `jti`. */
export interface ClientJwtRules {
  /** Accepted `aud` values: the JWT's `aud` must contain one of them. */
  audience: readonly string[];
  /** `sub` must be present and equal the client id (RFC 7523 client assertions). */
  subjectIsClient: boolean;
  /** `iat` is required (request objects); otherwise it is checked only when present. */
  requireIat: boolean;
  /**
   * Accepted `typ` headers, lower case without `application/`; `undefined` in the list accepts a JWS without
   * one. Keeps a JWT made for one purpose (a request object) from passing as another (a client assertion).
   */
  types: readonly (string | undefined)[];
  /**
   * What the JWT is for (RFC 9101 §10.8, RFC 8725 §3.11): an `assertion` (client assertion, JWT bearer grant)
   * must not carry authorization-request members; a `request-object` must not carry `sub`. So a JWT signed for
   * one purpose, and seen by others (request objects travel through browsers), never passes as the other.
   */
  purpose: 'assertion' | 'request-object';
}

/** Members of an authorization request: an assertion carrying one was made to be a request object. */
const REQUEST_MEMBERS = ['response_type', 'redirect_uri', 'login_hint', 'request'] as const;

/** Why the claims do not fit the JWT's purpose, or undefined when they do. Names the member, never its value. */
function crossPurposeReason(purpose: ClientJwtRules['purpose'], payload: JWTPayload, iss: string): string | undefined {
  if (purpose === 'request-object') {
    return payload.sub !== undefined ? 'a request object must not carry sub' : undefined;
  }
  const member = REQUEST_MEMBERS.find((name) => payload[name] !== undefined);
  if (member !== undefined) return `an assertion must not carry ${member}, a member of authorization requests`;
  if (payload.client_id !== undefined && payload.client_id !== iss) return 'its client_id is not its iss';
  return undefined;
}

/** A client's JWT failed a check. `reason` is for error descriptions: it never quotes the token or its claims. */
export class ClientJwtRejectedError extends Error {
  /** Stable identifier for handlers and logs; the message may change. */
  readonly code = 'NETAUTH_CLIENT_JWT_REJECTED';

  /**
   * @param signed whether the JWT's signature had verified with the client's keys when a later check failed: only
   * then has the sender proved the client's key, and may be told more than an unknown client id would be.
   */
  constructor(
    readonly reason: string,
    readonly signed = true,
  ) {
    super(reason);
    this.name = 'ClientJwtRejectedError';
  }
}

/** jose's claim checks run after the signature verified; every other error of jwtVerify comes before. */
function signatureVerified(error: unknown): boolean {
  return error instanceof errors.JWTExpired || error instanceof errors.JWTClaimValidationFailed;
}

/** Why jose refused the JWT, in words that reveal nothing of its content. */
function reasonOf(error: unknown): string {
  if (error instanceof ClientKeysUnavailableError) return error.message;
  if (error instanceof errors.JOSEAlgNotAllowed) return 'its alg is not one the client may sign with';
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return "its signature does not verify with the client's keys";
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys)
    return 'no registered key of the client matches it';
  if (error instanceof errors.JWTExpired) return 'it has expired';
  if (error instanceof errors.JWTClaimValidationFailed) return `its ${error.claim} claim is missing or wrong`;
  return 'it is not a valid signed JWT';
}

function typeOf(header: { typ?: unknown }): string | undefined {
  if (typeof header.typ !== 'string') return undefined;
  const typ = header.typ.toLowerCase();
  return typ.startsWith('application/') ? typ.slice('application/'.length) : typ;
}

/**
 * Marks a JWT id as used until `exp` (seconds since the epoch), in the store's atomic insert-if-absent. True
 * for the one caller that marked it: of concurrent uses exactly one wins, on every store. `namespace`
 * separates issuers (a client id, a DPoP key thumbprint); the id is hashed, so any jti makes a small key.
 */
export async function useJtiOnce(
  store: Store,
  namespace: string,
  jti: string,
  exp: number,
  nowMs: number,
): Promise<boolean> {
  const ttl = Math.max(1, Math.ceil(exp - nowMs / 1000) + CLOCK_SKEW);
  return store.add('jti', jtiRecordId(namespace, jti), {}, { ttl });
}

/** The store id of a JWT id's replay entry (`useJtiOnce`). */
export function jtiRecordId(namespace: string, jti: string): string {
  return sha256(`${namespace}\n${jti}`);
}

/**
 * Verifies JWTs signed by a client's registered keys (client assertions, request objects, and the JWT bearer
 * grant's assertions): jose checks the signature with the client's `jwks` / `jwksUri` and algorithms (never
 * `none` or HS*), `iss` = client_id, `aud`, `nbf` and `exp`; then the profile's windows (`exp` in the future
 * and at most 300 s away, `exp - iat` at most 300 s, `iat` not in the future) and `jti`, used once.
 */
export class ClientJwts {
  constructor(
    private readonly store: Store,
    readonly keys: ClientKeys,
    private readonly now: () => number,
    /**
     * Seconds a client's clock may run ahead: `clockTolerance` for `nbf`, and for `iat` the same or, under the
     * CAMARA preset, none (its SHALL). `exp` has none.
     */
    private readonly tolerance: ClockTolerance,
  ) {}

  async verify(client: RegisteredClient, jwt: string, rules: ClientJwtRules): Promise<JWTPayload> {
    const resolver = this.keys.resolver(client);
    if (!resolver) throw new ClientJwtRejectedError('the client has no registered keys (jwks or jwksUri)', false);
    const nowMs = this.now();
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      const verified = await jwtVerify(jwt, resolver, {
        algorithms: [...(client.signingAlgorithms ?? CLIENT_SIGNING_ALGORITHMS)],
        issuer: client.clientId,
        audience: [...rules.audience],
        ...(rules.subjectIsClient ? { subject: client.clientId } : {}),
        requiredClaims: rules.requireIat ? ['exp', 'jti', 'iat'] : ['exp', 'jti'],
        currentDate: new Date(nowMs),
        clockTolerance: this.tolerance.clockTolerance,
      });
      payload = verified.payload;
      typ = typeOf(verified.protectedHeader);
    } catch (error) {
      // No cause: jose's claim errors carry the whole payload.
      throw new ClientJwtRejectedError(reasonOf(error), signatureVerified(error));
    }
    if (!rules.types.includes(typ)) throw new ClientJwtRejectedError('its typ header is not one accepted here');
    const crossPurpose = crossPurposeReason(rules.purpose, payload, client.clientId);
    if (crossPurpose !== undefined) throw new ClientJwtRejectedError(crossPurpose);
    const now = nowMs / 1000;
    const { exp, iat, jti } = payload as { exp: number; iat?: number; jti: unknown };
    if (exp <= now) throw new ClientJwtRejectedError('it has expired');
    if (exp - now > MAX_JWT_LIFETIME)
      throw new ClientJwtRejectedError(`its exp is more than ${MAX_JWT_LIFETIME} s away`);
    if (iat !== undefined) {
      if (iat > now + this.tolerance.iat) throw new ClientJwtRejectedError('its iat is in the future');
      if (exp - iat > MAX_JWT_LIFETIME) throw new ClientJwtRejectedError(`exp - iat exceeds ${MAX_JWT_LIFETIME} s`);
    }
    if (typeof jti !== 'string' || jti === '') throw new ClientJwtRejectedError('its jti claim is missing or wrong');
    if (!(await useJtiOnce(this.store, `client:${client.clientId}`, jti, exp, nowMs))) {
      throw new ClientJwtRejectedError('its jti has been used before');
    }
    return payload;
  }
}
