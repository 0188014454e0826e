import { decodeJwt, type JWTPayload } from 'jose';
import type { Request } from 'express';
import { OAuthError, isOAuthError } from '../../errors.js';
import { randomTag, taggedId } from '../../crypto.js';
import { parseLoginHint, type LoginHint } from '../../identity/login-hint.js';
import { withoutProtocolScopes } from '../../identity/scope.js';
import { findByLoginHint } from '../../identity/subscribers.js';
import { JWT_BEARER_GRANT, type RegisteredClient } from '../../registry/clients.js';
import { overLimit } from '../../ops/rate-limits.js';
import { ClientJwtRejected } from '../client-auth/client-jwt.js';
import { assertionAudiences } from '../client-auth/private-key-jwt.js';
import type { GatewayContext } from '../context.js';
import type { FormParams } from '../http/form.js';
import type { Grant } from './grant.js';
import { decideScope, storedAuthorization } from '../requests/authorization.js';
import { issueAccessToken, reportIssued } from '../tokens/access-tokens.js';

/** `typ` of a JWT bearer assertion: none or `JWT`. A client assertion's or request object's own types never pass as one. */
const ASSERTION_TYPES = [undefined, 'jwt'] as const;

/** Assertions verified while they authenticated the client (no client credentials sent), for the exchange that follows. */
const verifiedAssertions = new WeakMap<FormParams, JWTPayload>();

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

/** What every request of this grant must have before anything is verified (and its `jti` spent). */
function assertionOf(params: FormParams): string {
  // CAMARA: the scope travels in the assertion's `scope` claim, never as a parameter.
  if (params.has('scope')) throw new OAuthError('invalid_request', 'the JWT bearer grant takes its scope from the assertion\'s scope claim; do not send a scope parameter');
  return params.require('assertion');
}

/**
 * RFC 7523 §3 as the CAMARA profile has it: signed by a key of the client, `iss` = client_id, `aud` the issuer,
 * the token endpoint or this endpoint, `exp` within 300 s, `iat` required and not ahead, `exp - iat` at most 300 s,
 * `jti` single use (the client's JWT verifier, as for client assertions). Any failure: invalid_grant (RFC 7523 §3.1).
 */
async function verifyAssertion(ctx: GatewayContext, client: RegisteredClient, assertion: string, req: Request): Promise<JWTPayload> {
  try {
    return await ctx.clientJwts.verify(client, assertion, { audience: assertionAudiences(ctx.issuer, req), subjectIsClient: false, requireIat: true, types: ASSERTION_TYPES });
  } catch (error) {
    if (error instanceof ClientJwtRejected) throw invalidGrant(`the assertion was refused: ${error.reason}`);
    throw error;
  }
}

/** The assertion's `sub`: `tel:+<E.164>` or `operatortoken:<token>`, in the formats of login_hint. */
function subjectOf(claims: JWTPayload): LoginHint {
  const { sub } = claims;
  let hint: LoginHint | undefined;
  try {
    hint = typeof sub === 'string' ? parseLoginHint(sub) : undefined;
  } catch (error) {
    if (!isOAuthError(error)) throw error;
  }
  if (hint === undefined || hint.type === 'ipport') throw invalidGrant('the assertion\'s sub must be tel:+<E.164> or operatortoken:<token>');
  return hint;
}

/** The subscriber the assertion names, where the gateway may serve them (the sandbox's allow-list). */
async function assertedSubscriber(ctx: GatewayContext, hint: LoginHint) {
  if (ctx.sandboxLines && !(hint.type === 'tel' && ctx.sandboxLines.has(hint.phoneNumber))) throw invalidGrant('the line is not on the sandbox allow-list');
  const subscriber = await findByLoginHint(ctx.subscribers, hint);
  if (!subscriber) throw invalidGrant('no subscriber is known by the assertion\'s sub');
  return subscriber;
}

/**
 * `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1, the CAMARA profile's JWT bearer flow): a
 * backend that already knows the subscriber asserts it, signed with its key, for the purpose and scopes of the
 * `scope` claim. The policy decides as for the other flows, but nothing can wait for consent here: consent needed
 * and not on record, a forbidden purpose, or an unknown subscriber is invalid_grant. Never a refresh token.
 *
 * The assertion may be the client's only authentication (CAMARA: "the assertion is interpreted as Client
 * Authentication"): with no client credentials in the request, its `iss` names the client, which must be a
 * `private_key_jwt` client, and verifying the assertion authenticates it. With client credentials, the
 * assertion's `iss` must be the authenticated client.
 */
export const jwtBearerGrant: Grant = {
  type: JWT_BEARER_GRANT,
  async authenticate(ctx, params, req) {
    const assertion = assertionOf(params);
    let issuer: unknown;
    try {
      issuer = decodeJwt(assertion).iss;
    } catch {
      /* not a JWT: names no client */
    }
    const client = typeof issuer === 'string' && issuer !== '' ? await ctx.clients.find(issuer) : undefined;
    const bodyClientId = params.get('client_id');
    // The assertion authenticates only a client that authenticates with its keys (its registered method).
    if (!client || client.tokenEndpointAuthMethod !== 'private_key_jwt' || (bodyClientId !== undefined && bodyClientId !== client.clientId)) {
      ctx.events.emit('client.authentication_failed', client === undefined ? { endpoint: 'token', reason: 'invalid_credentials' } : { endpoint: 'token', clientId: client.clientId, reason: 'invalid_credentials' });
      throw new OAuthError('invalid_client', 'client authentication failed');
    }
    verifiedAssertions.set(params, await verifyAssertion(ctx, client, assertion, req));
    return client;
  },

  async exchange(ctx, client, params, req, options) {
    const assertion = assertionOf(params);
    const claims = verifiedAssertions.get(params) ?? (await verifyAssertion(ctx, client, assertion, req));
    const hint = subjectOf(claims);
    if (typeof claims.scope !== 'string' || claims.scope.trim() === '') throw invalidGrant('the assertion has no scope claim (purpose and API scopes)');
    const decision = decideScope(ctx, client, claims.scope);
    if (decision.basis === 'forbidden') throw invalidGrant('the policy forbids this purpose and scope');
    const subscriber = await assertedSubscriber(ctx, hint);
    if (ctx.limits) {
      const hit = await ctx.limits.subscriber('token', client.clientId, subscriber.id);
      if (hit !== undefined) throw overLimit(ctx.events, { endpoint: 'token', limit: hit.limit, clientId: client.clientId, subscriberId: subscriber.id, retryAfter: hit.retryAfter });
    }
    let consentGrants: string[] = [];
    if (decision.consentScopes.length > 0) {
      const consent = await ctx.consent.state({ clientId: client.clientId, subscriberId: subscriber.id, purpose: decision.requested.purpose, scopes: decision.consentScopes });
      if (consent.state !== 'granted') throw invalidGrant('the subscriber\'s consent is needed for this purpose and scope and is not on record');
      consentGrants = consent.grantIds;
    }

    // No ID token and no refresh token here (CAMARA: this flow MUST NOT return refresh tokens): the granted scope says so.
    const authorization = storedAuthorization(client.clientId, subscriber, withoutProtocolScopes(decision.requested, { openid: true, offlineAccess: true }));
    const tokens = await issueAccessToken(ctx, authorization, taggedId(randomTag(), 16), consentGrants, undefined, options);
    reportIssued(ctx, authorization, JWT_BEARER_GRANT, tokens);
    return tokens;
  },
};
