import type { RequestHandler } from 'express';
import type { ConsentPolicy } from '../../consent/policy.js';
import { CLIENT_SIGNING_ALGORITHMS, type ClientRegistry } from '../../registry/clients.js';
import type { KeySet } from '../tokens/keys.js';
import { DPOP_ALGORITHMS } from '../tokens/dpop.js';
import { DPOP_HASH_CLAIMS } from '../tokens/dpop-binding.js';
import type { DpopHashClaim } from '../options.js';
import { CLIENT_AUTH_METHOD_DEFAULT, DISCOVERY_DEFAULTS } from '../../defaults.js';

/** What discovery announces from: the issuer, the registry's methods and grants, keys, policy, DPoP claims. */
export interface DiscoverySources {
  issuer: string;
  clients: ClientRegistry;
  idTokens: boolean;
  keys: KeySet | undefined;
  policy: ConsentPolicy;
  announcedDpopClaims: ReadonlySet<DpopHashClaim>;
}

/** OpenID Connect Discovery / RFC 8414 metadata for this gateway. */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  backchannel_authentication_endpoint: string;
  backchannel_token_delivery_modes_supported: ['poll'];
  backchannel_user_code_parameter_supported: false;
  grant_types_supported: string[];
  response_types_supported: ['code'];
  response_modes_supported: ['query'];
  token_endpoint_auth_methods_supported: string[];
  /** Present when a client authenticates with private_key_jwt. */
  token_endpoint_auth_signing_alg_values_supported?: string[];
  backchannel_authentication_request_signing_alg_values_supported: string[];
  code_challenge_methods_supported: ['S256'];
  authorization_response_iss_parameter_supported: true;
  scopes_supported: string[];
  subject_types_supported: ['pairwise'];
  claims_parameter_supported: false;
  request_parameter_supported: true;
  request_uri_parameter_supported: false;
  request_object_signing_alg_values_supported: string[];
  introspection_endpoint: string;
  introspection_endpoint_auth_methods_supported: string[];
  introspection_endpoint_auth_signing_alg_values_supported?: string[];
  revocation_endpoint: string;
  revocation_endpoint_auth_methods_supported: string[];
  revocation_endpoint_auth_signing_alg_values_supported?: string[];
  /** RFC 9449 §5.1: DPoP proofs are accepted (token endpoint and guard), signed with these. */
  dpop_signing_alg_values_supported: string[];
  /**
   * CAMARA: the DPoP extension claims required, at the token endpoint (`dpopClaimsRequired`) or at any guarded
   * route (the guard's `dpopClaimsRequired`): the union; absent when none. A proof may always carry them.
   */
  camara_dpop_claims_required?: string[];
  /** Always (OIDC Discovery §3 REQUIRED); its set is empty where nothing is signed. */
  jwks_uri: string;
  /** Always (REQUIRED): the published keys' algorithms, else RS256, which Discovery says must be listed. */
  id_token_signing_alg_values_supported: string[];
  [key: string]: unknown;
}

export function metadata(ctx: DiscoverySources): AuthorizationServerMetadata {
  const url = (path: string): string => `${ctx.issuer}${path}`;
  // The methods the registered clients use (a custom registry declares them; by default client_secret_basic).
  const declared = ctx.clients.authMethods ?? [];
  const authMethods: string[] = declared.length > 0 ? [...declared] : [CLIENT_AUTH_METHOD_DEFAULT];
  const algorithms = [...CLIENT_SIGNING_ALGORITHMS];
  // The grant types the registered clients use (a custom registry declares them; by default the seed's two).
  const grantTypes = [...(ctx.clients.grantTypes ?? DISCOVERY_DEFAULTS.grantTypes)];
  const protocolScopes = [
    ...(ctx.idTokens && ctx.keys ? ['openid'] : []),
    ...(grantTypes.includes('refresh_token') ? ['offline_access'] : []),
  ];
  const allowed = ctx.policy.rules().filter((r) => r.basis !== 'forbidden');
  // The registration form (`dpv:<Purpose>#<scope>`), then the values a CAMARA request's scope carries: one
  // `dpv:<Purpose>` and the API scopes (the profile's "Purpose as a scope").
  const scopes = [
    ...allowed.map((r) => `dpv:${r.purpose}#${r.scope}`),
    ...new Set(allowed.map((r) => `dpv:${r.purpose}`)),
    ...new Set(allowed.map((r) => r.scope)),
  ];
  const document: AuthorizationServerMetadata = {
    issuer: ctx.issuer,
    authorization_endpoint: url('/authorize'),
    token_endpoint: url('/token'),
    backchannel_authentication_endpoint: url('/bc-authorize'),
    backchannel_token_delivery_modes_supported: ['poll'],
    backchannel_user_code_parameter_supported: false,
    grant_types_supported: grantTypes,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    token_endpoint_auth_methods_supported: authMethods,
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    scopes_supported: [...protocolScopes, ...scopes],
    subject_types_supported: ['pairwise'],
    claims_parameter_supported: false,
    request_parameter_supported: true,
    request_uri_parameter_supported: false,
    request_object_signing_alg_values_supported: algorithms,
    backchannel_authentication_request_signing_alg_values_supported: algorithms,
    introspection_endpoint: url('/introspect'),
    introspection_endpoint_auth_methods_supported: authMethods,
    revocation_endpoint: url('/revoke'),
    revocation_endpoint_auth_methods_supported: authMethods,
    dpop_signing_alg_values_supported: [...DPOP_ALGORITHMS],
    jwks_uri: url('/jwks'),
    // Every published key's algorithm, the signing one first: a key rotated in is announced before use.
    id_token_signing_alg_values_supported: ctx.keys?.algorithms ?? [...DISCOVERY_DEFAULTS.idTokenSigningAlgorithms],
  };
  const dpopClaims = DPOP_HASH_CLAIMS.filter((claim) => ctx.announcedDpopClaims.has(claim));
  if (dpopClaims.length > 0) document.camara_dpop_claims_required = dpopClaims;
  if (authMethods.includes('private_key_jwt')) {
    document.token_endpoint_auth_signing_alg_values_supported = algorithms;
    document.introspection_endpoint_auth_signing_alg_values_supported = algorithms;
    document.revocation_endpoint_auth_signing_alg_values_supported = algorithms;
  }
  return document;
}

/**
 * GET /.well-known/openid-configuration (and RFC 8414 `oauth-authorization-server`): cacheable, built once, and
 * again if a guard created since requires a DPoP claim not yet announced (the set only grows).
 */
export function discoveryEndpoint(ctx: DiscoverySources): RequestHandler {
  let document = metadata(ctx);
  let announced = ctx.announcedDpopClaims.size;
  return (_req, res) => {
    if (announced !== ctx.announcedDpopClaims.size) {
      announced = ctx.announcedDpopClaims.size;
      document = metadata(ctx);
    }
    res.set('Cache-Control', 'public, max-age=300').json(document);
  };
}
