import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { audienceFor, dpopOption, withSignal, type ClientContext } from './configuration.js';
import { NetAuthClientError, fromOpenIdClientError } from './errors.js';
import { backchannelToken, type BackchannelToken } from './backchannel.js';

const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/**
 * The two grants a backend asks for without a subscriber's interaction (aggregators use both): client credentials
 * (RFC 6749 §4.4) for APIs that process no personal data, and the JWT bearer grant (RFC 7523 §2.1) for a
 * subscriber the backend already knows. Client authentication and DPoP as in the other flows.
 */

export interface ClientCredentialsParams {
  /** `dpv:<Purpose> <scope>…` (CAMARA) or `dpv:<Purpose>#<scope>`: scopes whose rule processes no personal data. */
  scope: string;
  /** Aborts the request (kind `aborted`). */
  signal?: AbortSignal;
}

export interface JwtBearerParams {
  /** The subscriber, as the assertion's `sub`: `tel:+<E.164>` or `operatortoken:<token>`. */
  sub: string;
  /** `dpv:<Purpose> <scope>…`: sent in the assertion's `scope` claim, as the CAMARA profile has it. */
  scope: string;
  /** Aborts the request (kind `aborted`). */
  signal?: AbortSignal;
}

/** Runs a gateway request under the caller's signal, with errors typed. */
async function granted(
  ctx: ClientContext,
  signal: AbortSignal | undefined,
  scope: string,
  call: () => Promise<oidc.TokenEndpointResponse>,
): Promise<BackchannelToken> {
  if (signal?.aborted) throw new NetAuthClientError('aborted', 'aborted');
  try {
    return backchannelToken(ctx, await (signal ? withSignal.run(signal, call) : call()), scope);
  } catch (cause) {
    throw fromOpenIdClientError(cause);
  }
}

/** `grant_type=client_credentials`: a token that represents no subscriber. */
export function clientCredentials(ctx: ClientContext, params: ClientCredentialsParams): Promise<BackchannelToken> {
  return granted(ctx, params.signal, params.scope, async () => {
    const { config, dpop } = await ctx.load();
    return oidc.clientCredentialsGrant(config, { scope: params.scope }, dpopOption(dpop));
  });
}

/**
 * The JWT bearer grant: an assertion signed with `privateKey`, `iss` the client, `sub` the subscriber, the
 * `scope` claim, 60 s of life and a single-use `jti` (the CAMARA profile's short life, within its 300 s).
 */
export function jwtBearer(ctx: ClientContext, params: JwtBearerParams): Promise<BackchannelToken> {
  return granted(ctx, params.signal, params.scope, async () => {
    const { config, signer, dpop } = await ctx.load();
    if (!signer) {
      const message = 'jwtBearer signs its assertion with the client key: set the client option privateKey';
      throw new NetAuthClientError('misconfigured', message);
    }
    // The gateway checks these against its own clock: the real time, not the injected one.
    const iat = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ scope: params.scope })
      .setProtectedHeader({ alg: signer.alg, ...(signer.kid ? { kid: signer.kid } : {}) })
      .setIssuer(config.clientMetadata().client_id)
      .setSubject(params.sub)
      .setAudience(audienceFor(config, signer, 'token_endpoint'))
      .setIssuedAt(iat)
      .setExpirationTime(iat + 60)
      .setJti(randomBytes(16).toString('base64url'))
      .sign(signer.key);
    return oidc.genericGrantRequest(config, JWT_BEARER_GRANT, { assertion }, dpopOption(dpop));
  });
}
