import { decodeJwt, type JWTPayload } from 'jose';
import type { Request } from 'express';
import { OAuthError } from '../../errors.js';
import { JWT_BEARER_GRANT, type RegisteredClient } from '../../registry/clients.js';
import type { FormParams } from '../http/form.js';
import { ClientJwtRejectedError, type ClientJwtRules, type ClientJwts } from './client-jwt.js';
import { assertionAudiences } from './private-key-jwt.js';
import type { ClientAuthMethodModule } from './method.js';

/** `typ` of a JWT bearer assertion: none or `JWT`; a client assertion's or request object's own types never pass. */
const ASSERTION_TYPES = [undefined, 'jwt'] as const;

/** The JWT bearer grant's `assertion`, after what every request of the grant must satisfy before it is verified. */
export function grantAssertion(params: FormParams): string {
  // CAMARA: the scope travels in the assertion's `scope` claim, never as a parameter. Checked before the
  // assertion is verified, so a refused request does not use up its `jti`.
  if (params.has('scope')) {
    const description = "the JWT bearer grant takes its scope from the assertion's scope claim";
    throw new OAuthError('invalid_request', `${description}; do not send a scope parameter`);
  }
  return params.require('assertion');
}

/** What a JWT bearer assertion must satisfy besides its signature and `iss` (`ClientJwts.verify`). */
function assertionRules(issuer: string, req: Request): ClientJwtRules {
  return {
    audience: assertionAudiences(issuer, req),
    subjectIsClient: false,
    requireIat: true,
    types: ASSERTION_TYPES,
    purpose: 'assertion',
  };
}

/**
 * RFC 7523 §3 as the CAMARA profile has it: signed by a key of the client, `iss` = client_id, `aud` the issuer,
 * the token endpoint or this endpoint, `exp` within 300 s, `iat` required and not ahead, `exp - iat` at most 300 s,
 * `jti` single use (the client's JWT verifier, as for client assertions). Any failure: invalid_grant (RFC 7523 §3.1).
 */
export async function verifyAssertion(
  jwts: ClientJwts,
  issuer: string,
  client: RegisteredClient,
  assertion: string,
  req: Request,
): Promise<JWTPayload> {
  try {
    return await jwts.verify(client, assertion, assertionRules(issuer, req));
  } catch (error) {
    if (!(error instanceof ClientJwtRejectedError)) throw error;
    throw refusedAssertion(error);
  }
}

/** The grant's answer to an assertion that failed a check (RFC 7523 §3.1). */
function refusedAssertion(error: ClientJwtRejectedError): OAuthError {
  return new OAuthError('invalid_grant', `the assertion was refused: ${error.reason}`);
}

/** The client the assertion names (`iss`, read without verifying it), or undefined for one that is no JWT. */
function issuerOf(assertion: string): string | undefined {
  try {
    const { iss } = decodeJwt(assertion);
    return typeof iss === 'string' && iss !== '' ? iss : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The JWT bearer grant's assertion as the client's only authentication (CAMARA: "the assertion is interpreted as
 * Client Authentication"; RFC 7521 §4.1 and §6.3), at the token endpoint when the request carries no client
 * credentials: its `iss` names the client, which must be a `private_key_jwt` client, and verifying the assertion
 * with the client's keys authenticates it. A failure counts towards the lock-out and is reported like any other;
 * the answer to an assertion that fails a check stays the grant's invalid_grant (RFC 7523 §3.1).
 */
export function jwtBearerAssertion(jwts: ClientJwts, issuer: string): ClientAuthMethodModule {
  return {
    method: 'private_key_jwt',
    presentedIn: (_req, params) => params.get('grant_type') === JWT_BEARER_GRANT,
    authenticate: async (req, _res, params, attempt) => {
      const assertion = grantAssertion(params);
      const clientId = issuerOf(assertion);
      if (clientId === undefined) return { failure: 'malformed' };
      return attempt(clientId, async (client) => {
        if (!client) return {};
        // Only a client that authenticates with its keys (its registered method) is authenticated by its assertion.
        if (client.tokenEndpointAuthMethod !== 'private_key_jwt') return { known: client };
        try {
          return {
            client,
            known: client,
            assertion: await jwts.verify(client, assertion, assertionRules(issuer, req)),
          };
        } catch (error) {
          if (!(error instanceof ClientJwtRejectedError)) throw error;
          // Until its signature verified, the sender proved nothing: it gets an unknown id's answer (401
          // invalid_client), so no one learns which ids authenticate with keys. Past it, the grant's detail.
          return error.signed ? { known: client, refusal: refusedAssertion(error) } : { known: client };
        }
      });
    },
  };
}
