import { OAuthError } from '../../errors.js';
import { parseScope, withoutProtocolScopes, type RequestedScope } from '../../identity/scope.js';
import { rulesFor, strictestBasis, type LegalBasis } from '../../consent/policy.js';
import type { RegisteredClient } from '../../registry/clients.js';
import type { Subscriber } from '../../identity/subscribers.js';
import { isNetworkAuthentication, type SubscriberIdentification } from '../../identity/identification.js';
import type { ConsentPolicy } from '../../consent/policy.js';

/** What a request asks for, checked against the client's registration and the consent policy. */
export interface ScopeDecision {
  requested: RequestedScope;
  /** The strictest legal basis of the requested scopes. */
  basis: LegalBasis;
  /** The scopes whose basis is consent: these need a consent record. */
  consentScopes: string[];
  /** A scope's tokens are single use: the grant never gets a refresh token (`offline_access` is not granted). */
  singleUse: boolean;
  /** The scopes whose rule says `requireNetworkAuthentication`: no subscriber named by the client may have them. */
  networkScopes: string[];
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
 * granted only to a client registered for `refresh_token` and never with a single-use scope (a refresh would mint
 * its token again: Number Verification forbids refresh tokens), and `openid` only where ID tokens are on (OIDC
 * Core §3.1.3.3: no `openid` without an ID token); else they are left out of the granted scope, in every grant.
 */
/** What deciding a scope uses: the consent policy, and whether ID tokens are on (`openid` is granted only then). */
export interface ScopeDeciding {
  policy: ConsentPolicy;
  idTokens: boolean;
}

export function decideScope(ctx: ScopeDeciding, client: RegisteredClient, scope: string): ScopeDecision {
  const parsed = parseScope(scope);
  // Read from the record on every request, never cached per object: a registry may edit a record it returned.
  const registered = new Set(client.scopes);
  for (const api of parsed.scopes) {
    if (!registered.has(`dpv:${parsed.purpose}#${api}`)) {
      throw new OAuthError('invalid_scope', `the client is not registered for dpv:${parsed.purpose}#${api}`);
    }
  }
  const rules = rulesFor(ctx.policy, parsed.purpose, parsed.scopes);
  const singleUse = rules.some((r) => r.singleUseAccessToken === true);
  const drop = { openid: !ctx.idTokens, offlineAccess: singleUse || !client.grantTypes.includes('refresh_token') };
  const dropped = (parsed.openid && drop.openid) || (parsed.offlineAccess && drop.offlineAccess);
  return {
    requested: dropped ? withoutProtocolScopes(parsed, drop) : parsed,
    basis: strictestBasis(rules),
    consentScopes: rules.filter((r) => r.basis === 'consent').map((r) => r.scope),
    singleUse,
    networkScopes: rules.filter((r) => r.requireNetworkAuthentication === true).map((r) => r.scope),
  };
}

const NAMED_BY: Record<SubscriberIdentification, string> = {
  network: 'the network',
  operatortoken: 'an operator token',
  tel: 'a phone number the client supplied',
  ipport: 'an address the client supplied',
};

/**
 * A scope that requires network authentication (its rule's `requireNetworkAuthentication`, Number Verification's
 * by default) is refused to a subscriber the client named: `access_denied` at /authorize and /bc-authorize,
 * `invalid_grant` for the JWT bearer grant and a refresh. Checked before the subscriber is looked up.
 */
export function checkIdentification(
  decision: ScopeDecision,
  identifiedBy: SubscriberIdentification | undefined,
  code: 'access_denied' | 'invalid_grant',
): void {
  const scope = decision.networkScopes[0];
  if (scope === undefined || (identifiedBy !== undefined && isNetworkAuthentication(identifiedBy))) return;
  const named = identifiedBy === undefined ? 'an identification not recorded' : NAMED_BY[identifiedBy];
  throw new OAuthError(
    code,
    `dpv:${decision.requested.purpose}#${scope} requires the subscriber identified by the mobile network or an ` +
      `operator token, not by ${named}`,
  );
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
  /** How the subscriber was identified. Records written by earlier versions lack it: read as not recorded. */
  identifiedBy: SubscriberIdentification;
  /**
   * Epoch ms when the authorization began (GET /authorize, /bc-authorize, the assertion's grant), carried by every
   * record and token that comes of it: a revocation of the subscriber or client refuses whatever began before it
   * (gateway/levers/not-before.ts), however late it was issued. Records of earlier versions lack it: read as 0.
   */
  authorizedAt: number;
}

export function storedAuthorization(
  clientId: string,
  subscriber: Subscriber,
  requested: RequestedScope,
  identifiedBy: SubscriberIdentification,
  authorizedAt: number,
): StoredAuthorization {
  return {
    clientId,
    subscriberId: subscriber.id,
    phoneNumber: subscriber.phoneNumber ?? null,
    purpose: requested.purpose,
    scopes: requested.scopes,
    scope: requested.value,
    identifiedBy,
    authorizedAt,
  };
}

/** Only the authorization's own fields of a record that has more. */
export function authorizationOf(record: StoredAuthorization): StoredAuthorization {
  const { clientId, subscriberId, phoneNumber, purpose, scopes, scope, identifiedBy, authorizedAt } = record;
  return { clientId, subscriberId, phoneNumber, purpose, scopes, scope, identifiedBy, authorizedAt };
}

export function subscriberOf(record: Pick<StoredAuthorization, 'subscriberId' | 'phoneNumber'>): Subscriber {
  return record.phoneNumber === null
    ? { id: record.subscriberId }
    : { id: record.subscriberId, phoneNumber: record.phoneNumber };
}
