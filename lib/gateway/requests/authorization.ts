import { OAuthError } from '../../errors.js';
import { parseScope, withoutProtocolScopes, type RequestedScope } from '../../identity/scope.js';
import { rulesFor, strictestBasis, type LegalBasis } from '../../consent/policy.js';
import type { RegisteredClient } from '../../registry/clients.js';
import type { Subscriber } from '../../identity/subscribers.js';
import type { GatewayContext } from '../context.js';

/** What a request asks for, checked against the client's registration and the consent policy. */
export interface ScopeDecision {
  requested: RequestedScope;
  /** The strictest legal basis of the requested scopes. */
  basis: LegalBasis;
  /** The scopes whose basis is consent: these need a consent record. */
  consentScopes: string[];
}

/** OIDC Core §5.4: the scopes that ask for standard claims, which only an OpenID Connect request can carry. */
const CLAIM_SCOPES: readonly string[] = ['profile', 'email', 'phone', 'address'];

/**
 * An authorization request (GET /authorize, /bc-authorize) asking for OIDC claims (the `claims` parameter, or
 * a claim scope) without `openid` is invalid_request, the CAMARA profile's "missing openid". Checked on the scope
 * as sent, before anything is dropped from it.
 */
export function checkOpenidForClaims(scope: string, claims: string | undefined): void {
  const tokens = scope.split(' ');
  if (tokens.includes('openid')) return;
  const asked = claims !== undefined ? 'the claims parameter' : CLAIM_SCOPES.find((s) => tokens.includes(s));
  if (asked !== undefined) {
    const description = `${asked} asks for OpenID Connect claims: openid is missing from the scope`;
    throw new OAuthError('invalid_request', description);
  }
}

/**
 * The scope a request asks for, checked against the client's registration and the policy. `offline_access` is
 * granted only to a client registered for `refresh_token`, and `openid` only where ID tokens are on (OIDC Core
 * §3.1.3.3: no `openid` without an ID token); else they are left out of the granted scope, in every grant.
 */
export function decideScope(ctx: GatewayContext, client: RegisteredClient, scope: string): ScopeDecision {
  const parsed = parseScope(scope);
  const drop = { openid: !ctx.idTokens, offlineAccess: !client.grantTypes.includes('refresh_token') };
  const dropped = (parsed.openid && drop.openid) || (parsed.offlineAccess && drop.offlineAccess);
  const requested = dropped ? withoutProtocolScopes(parsed, drop) : parsed;
  // Read from the record on every request, never cached per object: a registry may edit a record it returned.
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

/**
 * Who, for which client, for what: the common ground of every record of an authorization (pending consent,
 * code, backchannel request, access token), stored flat so any store can keep it as JSON.
 */
export interface StoredAuthorization {
  clientId: string;
  subscriberId: string;
  phoneNumber: string | null;
  purpose: string;
  /** API scopes. */
  scopes: string[];
  /** The granted scope string, as requested. */
  scope: string;
}

export function storedAuthorization(
  clientId: string,
  subscriber: Subscriber,
  requested: RequestedScope,
): StoredAuthorization {
  return {
    clientId,
    subscriberId: subscriber.id,
    phoneNumber: subscriber.phoneNumber ?? null,
    purpose: requested.purpose,
    scopes: requested.scopes,
    scope: requested.value,
  };
}

/** Only the authorization's own fields of a record that has more. */
export function authorizationOf(record: StoredAuthorization): StoredAuthorization {
  const { clientId, subscriberId, phoneNumber, purpose, scopes, scope } = record;
  return { clientId, subscriberId, phoneNumber, purpose, scopes, scope };
}

export function subscriberOf(record: Pick<StoredAuthorization, 'subscriberId' | 'phoneNumber'>): Subscriber {
  return record.phoneNumber === null
    ? { id: record.subscriberId }
    : { id: record.subscriberId, phoneNumber: record.phoneNumber };
}
