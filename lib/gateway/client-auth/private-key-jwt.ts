import { decodeJwt } from 'jose';
import type { Request } from 'express';
import type { FormParams } from '../http/form.js';
import { routePath } from '../http/route-path.js';
import { ClientJwtRejectedError, type ClientJwts } from './client-jwt.js';
import type { ClientAuthMethodModule, Unreadable } from './method.js';

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * `typ` of a client assertion: none, `JWT`, or draft-ietf-oauth-rfc7523bis's `client-authentication+jwt`.
 * A request object (`oauth-authz-req+jwt`, seen in browser URLs) never passes as one.
 */
const ASSERTION_TYPES = [undefined, 'jwt', 'client-authentication+jwt'] as const;

/**
 * The endpoints a client assertion (or a JWT bearer grant's assertion) may name as `aud`, besides the issuer:
 * the token endpoint and the one it is sent to.
 */
export function assertionAudiences(issuer: string, req: Request): string[] {
  return [issuer, `${issuer}/token`, `${issuer}${routePath(req)}`];
}

/** The client id the assertion names: the body's `client_id` if sent (it must match), else the unverified `sub`. */
function claim(params: FormParams): { clientId: string } | Unreadable {
  if (params.get('client_assertion_type') !== CLIENT_ASSERTION_TYPE) return { failure: 'malformed' };
  const assertion = params.get('client_assertion');
  if (assertion === undefined) return { failure: 'missing' };
  const clientId = params.get('client_id');
  if (clientId !== undefined) return { clientId };
  try {
    const { sub } = decodeJwt(assertion);
    if (typeof sub === 'string' && sub !== '') return { clientId: sub };
  } catch {
    /* not a JWT */
  }
  return { failure: 'malformed' };
}

/**
 * RFC 7523 §2.2 `private_key_jwt` (the CAMARA profile's client authentication): `client_assertion`, a JWT signed
 * by one of the client's registered keys, with `iss` = `sub` = client_id, `aud` the issuer, the token endpoint or
 * this endpoint, a short life and a single-use `jti`. A failure is a failed authentication, as a wrong secret.
 */
export function privateKeyJwt(jwts: ClientJwts, issuer: string): ClientAuthMethodModule {
  return {
    method: 'private_key_jwt',
    presentedIn: (_req, params) => params.has('client_assertion') || params.has('client_assertion_type'),
    authenticate: async (req, _res, params, attempt) => {
      const claimed = claim(params);
      if ('failure' in claimed) return claimed;
      const assertion = params.require('client_assertion');
      return attempt(claimed.clientId, async (client) => {
        if (!client) return {};
        // A client registered for another method is refused without spending a signature check (or a jti) on it.
        if (client.tokenEndpointAuthMethod !== 'private_key_jwt') return { known: client };
        try {
          await jwts.verify(client, assertion, {
            audience: assertionAudiences(issuer, req),
            subjectIsClient: true,
            requireIat: false,
            types: ASSERTION_TYPES,
            purpose: 'assertion',
          });
        } catch (error) {
          if (error instanceof ClientJwtRejectedError) return { known: client };
          throw error;
        }
        return { client, known: client };
      });
    },
  };
}
