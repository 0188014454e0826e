import * as oidc from 'openid-client';
import type { NetAuthClientOptions } from './options.js';
import { NetAuthClientError, fromOAuthError } from './errors.js';

/**
 * The openid-client configuration, built once: discovered from the issuer, or from explicit endpoints.
 * A failed discovery is not cached, so the next request tries again.
 */
export function configurationLoader(options: NetAuthClientOptions): () => Promise<oidc.Configuration> {
  let pending: Promise<oidc.Configuration> | undefined;
  const auth = oidc.ClientSecretBasic(options.clientSecret);
  const build = async (): Promise<oidc.Configuration> => {
    if (typeof options.gateway === 'string') {
      try {
        return await oidc.discovery(new URL(options.gateway), options.clientId, undefined, auth, {
          ...(options.allowInsecureRequests ? { execute: [oidc.allowInsecureRequests] } : {}),
        });
      } catch (cause) {
        throw new NetAuthClientError('unavailable', 'could not discover the gateway metadata', { cause });
      }
    }
    const config = new oidc.Configuration({ ...options.gateway }, options.clientId, undefined, auth);
    if (options.allowInsecureRequests) oidc.allowInsecureRequests(config);
    return config;
  };
  return () => {
    pending ??= build().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}

/** Turns openid-client's errors (token and bc-authorize endpoints) into NetAuthClientError. */
export function fromOpenIdClientError(error: unknown): NetAuthClientError {
  if (error instanceof NetAuthClientError) return error;
  if (error instanceof oidc.ResponseBodyError) {
    if (error.status === 503) return fromOAuthError('temporarily_unavailable', error.error_description, error);
    return fromOAuthError(error.error, error.error_description, error, 'token_error');
  }
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) {
    return new NetAuthClientError('aborted', 'aborted', { cause: error });
  }
  if (error instanceof TypeError && /fetch failed/i.test(error.message)) {
    return new NetAuthClientError('unavailable', 'the gateway could not be reached', { cause: error });
  }
  return new NetAuthClientError('token_error', 'the token exchange failed', { cause: error });
}
