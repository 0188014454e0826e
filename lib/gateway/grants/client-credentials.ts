import { OAuthError } from '../../errors.js';
import { randomTag, taggedId } from '../../crypto.js';
import { rulesFor } from '../../consent/policy.js';
import { withoutProtocolScopes } from '../../identity/scope.js';
import type { Grant } from './grant.js';
import { overLimit } from '../../ops/rate-limits.js';
import { decideScope } from '../requests/authorization.js';
import { issueAccessToken, reportIssued, type TokenAuthorization } from '../tokens/access-tokens.js';

/**
 * `grant_type=client_credentials` (RFC 6749 §4.4, as the CAMARA profile allows it): a two-legged token, which
 * represents no subscriber, so no one's personal data may be reached with it. `scope` is required (CAMARA), and
 * every scope's policy rule must say `personalData: false`; anything else is invalid_scope. No ID token, no
 * refresh token; the guard refuses the token on routes that need a subscriber (the default). Each client may hold
 * only so many at once (rateLimits.clientCredentials.perClient), so it cannot grow the store without bound.
 */
export const clientCredentialsGrant: Grant = {
  type: 'client_credentials',
  async exchange(ctx, client, params, _req, options) {
    const decision = decideScope(ctx, client, params.require('scope'));
    const { purpose, scopes } = decision.requested;
    const personal = rulesFor(ctx.policy, purpose, scopes).filter(
      (rule) => rule.personalData !== false || rule.basis === 'forbidden',
    );
    if (personal.length > 0) {
      throw new OAuthError(
        'invalid_scope',
        `dpv:${purpose}#${personal[0]!.scope} processes personal data (or is forbidden): client credentials are only for APIs that process none; use a flow that identifies the subscriber`,
      );
    }
    const wait = await ctx.limits?.twoLeggedToken(client.clientId);
    if (wait !== undefined) {
      const event = { endpoint: 'token', limit: 'client', clientId: client.clientId, retryAfter: wait } as const;
      const description = 'too many client credentials tokens for this client; reuse the one it holds until it expires';
      throw overLimit(ctx.events, event, description);
    }
    const granted = withoutProtocolScopes(decision.requested, { openid: true, offlineAccess: true });
    const authorization: TokenAuthorization = {
      clientId: client.clientId,
      subscriberId: null,
      phoneNumber: null,
      purpose,
      scopes,
      scope: granted.value,
      identifiedBy: null,
      authorizedAt: ctx.now(),
    };
    const issue = { ...options, maxLifetime: ctx.lifetimes.backendAccessToken };
    const tokens = await issueAccessToken(ctx, authorization, taggedId(randomTag(), 16), [], undefined, issue);
    reportIssued(ctx, authorization, 'client_credentials', tokens);
    return tokens;
  },
};
