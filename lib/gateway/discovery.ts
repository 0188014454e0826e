import type { GatewayContext } from './context.js';

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
  backchannel_authentication_request_signing_alg_values_supported?: string[];
  code_challenge_methods_supported: ['S256'];
  authorization_response_iss_parameter_supported: true;
  scopes_supported: string[];
  subject_types_supported: ['pairwise'];
  claims_parameter_supported: false;
  request_parameter_supported: false;
  request_uri_parameter_supported: false;
  [key: string]: unknown;
}

export function metadata(ctx: GatewayContext): AuthorizationServerMetadata {
  const url = (path: string): string => `${ctx.issuer}${path}`;
  return {
    issuer: ctx.issuer,
    authorization_endpoint: url('/authorize'),
    token_endpoint: url('/token'),
    backchannel_authentication_endpoint: url('/bc-authorize'),
    backchannel_token_delivery_modes_supported: ['poll'],
    backchannel_user_code_parameter_supported: false,
    grant_types_supported: ['authorization_code', 'urn:openid:params:grant-type:ciba'],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    scopes_supported: ctx.policy
      .rules()
      .filter((r) => r.basis !== 'forbidden')
      .map((r) => `dpv:${r.purpose}#${r.scope}`),
    subject_types_supported: ['pairwise'],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
  };
}
