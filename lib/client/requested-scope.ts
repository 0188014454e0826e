import type * as oidc from 'openid-client';
import { NetAuthClientError } from './errors.js';

/**
 * `openid` asked of a gateway whose metadata leaves it out of `scopes_supported` (a gateway without ID tokens):
 * the gateway would grant the rest without it, and the token response's missing ID token would read as the
 * gateway's failure. Said before anything is sent, naming the cause. Metadata without `scopes_supported` says
 * nothing, so nothing is refused then.
 */
export function checkRequestedScope(config: oidc.Configuration, scope: string): void {
  if (!scope.split(' ').includes('openid')) return;
  const metadata = config.serverMetadata();
  const supported = metadata.scopes_supported;
  if (!Array.isArray(supported) || supported.includes('openid')) return;
  throw new NetAuthClientError(
    'misconfigured',
    `the gateway ${metadata.issuer} grants no openid: its metadata does not list openid in scopes_supported ` +
      '(it issues no ID tokens); remove openid from the scope, or ask the operator to turn ID tokens on',
  );
}
