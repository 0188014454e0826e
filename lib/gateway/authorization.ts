import { OAuthError } from '../errors.js';
import { parseScope, type RequestedScope } from '../identity/scope.js';
import { rulesFor, strictestBasis, type LegalBasis } from '../consent/policy.js';
import type { RegisteredClient } from '../registry/clients.js';
import type { Subscriber } from '../identity/subscribers.js';
import type { GatewayContext } from './context.js';

/** What a request asks for, checked against the client's registration and the consent policy. */
export interface ScopeDecision {
  requested: RequestedScope;
  /** The strictest legal basis of the requested scopes. */
  basis: LegalBasis;
  /** The scopes whose basis is consent: these need a consent record. */
  consentScopes: string[];
}

export function decideScope(ctx: GatewayContext, client: RegisteredClient, scope: string): ScopeDecision {
  const requested = parseScope(scope);
  for (const api of requested.scopes) {
    if (!client.scopes.includes(`dpv:${requested.purpose}#${api}`)) {
      throw new OAuthError('invalid_scope', `the client is not registered for dpv:${requested.purpose}#${api}`);
    }
  }
  const rules = rulesFor(ctx.policy, requested.purpose, requested.scopes);
  return {
    requested,
    basis: strictestBasis(rules),
    consentScopes: rules.filter((r) => r.basis === 'consent').map((r) => r.scope),
  };
}

/** A granted authorization, the common ground of both grants: who, for which client, for what. */
export interface Authorization {
  clientId: string;
  subscriber: Subscriber;
  purpose: string;
  scopes: string[];
  scope: string;
  /** Grant ids tokens issued from this authorization belong to (its own, and the consents it rests on). */
  grants: string[];
}
