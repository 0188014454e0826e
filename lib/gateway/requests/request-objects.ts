import { OAuthError } from '../../errors.js';
import type { RegisteredClient } from '../../registry/clients.js';
import { ClientJwtRejectedError, type ClientJwts } from '../client-auth/client-jwt.js';
import { FormParams } from '../http/form.js';

/** The endpoints that take a signed request object, by their path under the issuer. */
export type SignedRequestEndpoint = 'authorize' | 'bc-authorize';

/** `typ` of a request object: none, `JWT`, or RFC 9101's `oauth-authz-req+jwt` (what openid-client sends). */
const REQUEST_TYPES = [undefined, 'jwt', 'oauth-authz-req+jwt'] as const;

/** Claims about the JWT itself, not request parameters. */
const JWT_CLAIMS = new Set(['iss', 'aud', 'iat', 'exp', 'nbf', 'jti']);

/** Parameters the endpoints read: inside a request object they must be strings. Other claims of other types are ignored. */
const STRING_PARAMETERS = new Set([
  'client_id',
  'response_type',
  'redirect_uri',
  'scope',
  'state',
  'nonce',
  'prompt',
  'login_hint',
  'login_hint_token',
  'id_token_hint',
  'code_challenge',
  'code_challenge_method',
  'response_mode',
]);

/** CAMARA profile: at /authorize these are also sent as plain parameters, and must equal the signed ones. */
const ALSO_PLAIN_AT_AUTHORIZE = ['client_id', 'response_type', 'scope', 'redirect_uri'] as const;

function invalid(description: string): OAuthError {
  return new OAuthError('invalid_request_object', description);
}

/** The request object's parameters, as the endpoint reads plain ones (strings; an empty value is absent). */
function parametersOf(claims: Record<string, unknown>, client: RegisteredClient): FormParams {
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(claims)) {
    if (JWT_CLAIMS.has(name)) continue;
    if (name === 'request' || name === 'request_uri')
      throw invalid('a request object must not contain request or request_uri');
    if (typeof value === 'string') values[name] = value;
    else if (STRING_PARAMETERS.has(name)) throw invalid(`${name} in the request object must be a string`);
  }
  const signed = new FormParams(values);
  const clientId = signed.get('client_id');
  if (clientId !== undefined && clientId !== client.clientId)
    throw invalid('client_id in the request object is not the client');
  return signed;
}

/**
 * The parameters a request to /authorize or /bc-authorize is decided on (RFC 9101; CIBA Core §7.1.1; the CAMARA
 * profile). With `request`: the signed request object, verified by the client's registered keys (`iss` = the
 * client, `aud` the issuer or this endpoint's URL, `iat`, `exp` within 300 s, `jti` used once); then ONLY its
 * parameters are used. At /authorize, `client_id`, `response_type`, `scope` and `redirect_uri` must also be sent
 * plainly and equal the signed ones. Any failure is `invalid_request_object`. Without `request`: the plain
 * parameters, unless the client is registered with `requireSignedRequestObject` (`invalid_request`).
 * `request_uri` (at /authorize) is `request_uri_not_supported`.
 */
/** What reading a request object uses: the issuer (its audience) and the verifier of client-signed JWTs. */
export interface RequestObjectReading {
  issuer: string;
  clientJwts: ClientJwts;
}

export async function requestParameters(
  ctx: RequestObjectReading,
  client: RegisteredClient,
  params: FormParams,
  endpoint: SignedRequestEndpoint,
): Promise<{ params: FormParams; signed: boolean }> {
  if (endpoint === 'authorize' && params.has('request_uri')) {
    throw new OAuthError(
      'request_uri_not_supported',
      'request_uri is not supported; send the request object by value (request)',
    );
  }
  const request = params.get('request');
  if (request === undefined) {
    if (client.requireSignedRequestObject)
      throw new OAuthError('invalid_request', 'this client must send its request as a signed request object (request)');
    return { params, signed: false };
  }
  let claims: Record<string, unknown>;
  try {
    claims = await ctx.clientJwts.verify(client, request, {
      audience: [ctx.issuer, `${ctx.issuer}/${endpoint}`],
      subjectIsClient: false,
      requireIat: true,
      types: REQUEST_TYPES,
      purpose: 'request-object',
    });
  } catch (error) {
    if (error instanceof ClientJwtRejectedError) throw invalid(`request object refused: ${error.reason}`);
    throw error;
  }
  const signed = parametersOf(claims, client);
  if (endpoint === 'authorize') {
    for (const name of ALSO_PLAIN_AT_AUTHORIZE) {
      const plain = params.get(name);
      if (plain === undefined) throw invalid(`${name} must also be sent as a plain parameter, equal to the signed one`);
      if (signed.get(name) !== plain) throw invalid(`${name} differs from the one in the request object`);
    }
  }
  return { params: signed, signed: true };
}
