import type { Request } from 'express';
import type { OAuthError } from '../../errors.js';
import type { RateLimitedEvent } from '../../ops/events.js';
import type { JWTPayload } from 'jose';
import type { RegisteredClient, GrantType } from '../../registry/clients.js';
import type { SubscriberDirectory } from '../../identity/subscribers.js';
import type { ClientJwts } from '../client-auth/client-jwt.js';
import type { Consents } from '../consents.js';
import type { ScopeDeciding } from '../requests/authorization.js';
import type { Sandbox } from '../requests/sandbox.js';
import type { SubscriberLimits } from '../requests/subscriber-limit.js';
import type { IdTokenIssuing } from '../tokens/id-tokens.js';
import type { RefreshTokenKeeping } from '../tokens/refresh-tokens.js';
import type { FormParams } from '../http/form.js';
import type { AccessTokenIssuing, IssueOptions, TokenResponse } from '../tokens/access-tokens.js';

/**
 * What the token endpoint settled for this request before handing over: the DPoP key the token is bound to, the
 * same for every grant, which a grant passes to `issueAccessToken` (adding its refresh token, if any); and the JWT
 * bearer grant's assertion when it authenticated the client (its verified claims: the grant does not verify it again).
 */
export interface ExchangeOptions extends IssueOptions {
  assertion?: JWTPayload | undefined;
}

/**
 * What a grant works with: issuing access, ID and refresh tokens, deciding scopes, the per-subscriber limits and
 * the sandbox, and the consents, subscribers and client-signed JWTs it checks. The composition root
 * (lib/gateway/context.ts) builds them; a grant names nothing else.
 */
export interface GrantCollaborators
  extends AccessTokenIssuing,
    IdTokenIssuing,
    RefreshTokenKeeping,
    ScopeDeciding,
    SubscriberLimits,
    Sandbox {
  consent: Consents;
  subscribers: SubscriberDirectory;
  clientJwts: ClientJwts;
}

/**
 * One grant type of the token endpoint, as a small pluggable module (after oauth2orize's exchanges):
 * the endpoint authenticates the client and checks it may use the grant, then hands over.
 */
export interface Grant {
  type: GrantType;
  exchange(
    ctx: GrantCollaborators,
    client: RegisteredClient,
    params: FormParams,
    req: Request,
    options: ExchangeOptions,
  ): Promise<TokenResponse>;
  /**
   * The answer to a request of this grant over the client's token limit (or its DPoP key's), reported as the
   * grant sees fit; without it, 429 with Retry-After (reported as `rate.limited`).
   */
  overClientLimit?(ctx: GrantCollaborators, event: RateLimitedEvent): OAuthError;
}
