import type { JWTPayload } from 'jose';
import { OAuthError, isOAuthError } from '../../errors.js';
import { randomTag, taggedId } from '../../crypto.js';
import { parseLoginHint, type LoginHint } from '../../identity/login-hint.js';
import { withoutProtocolScopes } from '../../identity/scope.js';
import { findByLoginHint } from '../../identity/subscribers.js';
import { JWT_BEARER_GRANT } from '../../registry/clients.js';
import { grantAssertion, verifyAssertion } from '../client-auth/jwt-bearer-assertion.js';
import type { Grant, GrantCollaborators } from './grant.js';
import { checkIdentification, decideScope, storedAuthorization } from '../requests/authorization.js';
import { identificationOfHint } from '../../identity/identification.js';
import { sandboxRefusal } from '../requests/sandbox.js';
import { limitSubscriber } from '../requests/subscriber-limit.js';
import { issueAccessToken, reportIssued } from '../tokens/access-tokens.js';

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
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
  if (hint === undefined || hint.type === 'ipport')
    throw invalidGrant("the assertion's sub must be tel:+<E.164> or operatortoken:<token>");
  return hint;
}

/** The subscriber the assertion names, where the gateway may serve them (the sandbox's allow-list). */
async function assertedSubscriber(ctx: GrantCollaborators, hint: LoginHint) {
  const refused = sandboxRefusal(ctx, hint);
  if (refused !== undefined) throw invalidGrant(refused);
  const subscriber = await findByLoginHint(ctx.subscribers, hint);
  if (!subscriber) throw invalidGrant("no subscriber is known by the assertion's sub");
  return subscriber;
}

/**
 * `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1, the CAMARA profile's JWT bearer flow): a
 * backend that already knows the subscriber asserts it, signed with its key, for the purpose and scopes of the
 * `scope` claim. The policy decides as for the other flows, but nothing can wait for consent here: consent needed
 * and not on record, a forbidden purpose, or an unknown subscriber is invalid_grant. Never a refresh token.
 *
 * The assertion may be the client's only authentication (CAMARA: "the assertion is interpreted as Client
 * Authentication"): the client authenticator then verified it (client-auth/jwt-bearer-assertion.ts) and hands its
 * claims over. With client credentials in the request, it is verified here: its `iss` must be the authenticated client.
 */
export const jwtBearerGrant: Grant = {
  type: JWT_BEARER_GRANT,
  async exchange(ctx, client, params, req, options) {
    const { assertion, ...issue } = options;
    // Verified already when it authenticated the client; else it must be the authenticated client's.
    const claims =
      assertion ?? (await verifyAssertion(ctx.clientJwts, ctx.issuer, client, grantAssertion(params), req));
    const hint = subjectOf(claims);
    if (typeof claims.scope !== 'string' || claims.scope.trim() === '')
      throw invalidGrant('the assertion has no scope claim (purpose and API scopes)');
    const decision = decideScope(ctx, client, claims.scope);
    if (decision.basis === 'forbidden') throw invalidGrant('the policy forbids this purpose and scope');
    const identifiedBy = identificationOfHint(hint);
    checkIdentification(decision, identifiedBy, 'invalid_grant');
    const subscriber = await assertedSubscriber(ctx, hint);
    await limitSubscriber(ctx, 'token', client.clientId, subscriber.id);
    let consentGrants: string[] = [];
    if (decision.consentScopes.length > 0) {
      const consent = await ctx.consent.state({
        clientId: client.clientId,
        subscriberId: subscriber.id,
        purpose: decision.requested.purpose,
        scopes: decision.consentScopes,
      });
      if (consent.state !== 'granted')
        throw invalidGrant("the subscriber's consent is needed for this purpose and scope and is not on record");
      consentGrants = consent.grantIds;
    }

    // No ID token and no refresh token here (CAMARA: this flow MUST NOT return refresh tokens): the granted scope says so.
    const authorization = storedAuthorization(
      client.clientId,
      subscriber,
      withoutProtocolScopes(decision.requested, { openid: true, offlineAccess: true }),
      identifiedBy,
      ctx.now(),
    );
    const grantId = taggedId(randomTag(), 16);
    const backend = { ...issue, maxLifetime: ctx.lifetimes.backendAccessToken };
    const tokens = await issueAccessToken(ctx, authorization, grantId, consentGrants, undefined, backend);
    reportIssued(ctx, authorization, JWT_BEARER_GRANT, tokens);
    return tokens;
  },
};
