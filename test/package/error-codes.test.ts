import { describe, expect, it } from 'vitest';
import * as appSide from '../../lib/client/index.js';
import { ClientJwtRejectedError } from '../../lib/gateway/client-auth/client-jwt.js';
import { ClientKeysUnavailableError } from '../../lib/gateway/client-auth/client-keys.js';
import { DpopProofRejectedError } from '../../lib/gateway/tokens/dpop.js';
import * as gateway from '../../lib/index.js';

/** Handlers and log queries branch on `code`, so each error class keeps its name and code from release to release. */
const PUBLIC: Record<string, { error: Error; code: string }> = {
  OAuthError: { error: new gateway.OAuthError('invalid_request'), code: 'invalid_request' },
  StoreUnavailableError: {
    error: new gateway.StoreUnavailableError('Redis did not answer'),
    code: 'NETAUTH_STORE_UNAVAILABLE',
  },
  StoreDataLossError: { error: new gateway.StoreDataLossError('127.0.0.1:6379'), code: 'NETAUTH_REDIS_DATA_LOSS' },
  RateLimitFallbackError: {
    error: new gateway.RateLimitFallbackError('NOSCRIPT'),
    code: 'NETAUTH_RATE_LIMIT_FALLBACK',
  },
  NetAuthClientError: {
    error: new appSide.NetAuthClientError('state_mismatch', "the callback is not this session's"),
    code: 'NETAUTH_APP_STATE_MISMATCH',
  },
};

/** Thrown inside the gateway and answered as OAuth errors; their codes still show in logs and causes. */
const INTERNAL: Record<string, { error: Error; code: string }> = {
  ClientJwtRejectedError: { error: new ClientJwtRejectedError('it has expired'), code: 'NETAUTH_CLIENT_JWT_REJECTED' },
  ClientKeysUnavailableError: {
    error: new ClientKeysUnavailableError('answered 500'),
    code: 'NETAUTH_CLIENT_KEYS_UNAVAILABLE',
  },
  DpopProofRejectedError: { error: new DpopProofRejectedError('its htm differs'), code: 'NETAUTH_DPOP_PROOF_REJECTED' },
};

function exportedErrorClasses(module: Record<string, unknown>): string[] {
  return Object.entries(module)
    .filter(([, value]) => typeof value === 'function' && value.prototype instanceof Error)
    .map(([name]) => name);
}

describe('error classes', () => {
  it('every error class the package exports is named …Error and listed here with its code', () => {
    const exported = [...exportedErrorClasses(gateway), ...exportedErrorClasses(appSide)].sort();
    expect(exported).toEqual(Object.keys(PUBLIC).sort());
    for (const name of exported) expect(name).toMatch(/Error$/);
  });

  it.each(Object.entries({ ...PUBLIC, ...INTERNAL }))('%s: its name and stable code', (name, { error, code }) => {
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect((error as Error & { code: unknown }).code).toBe(code);
  });

  it('NetAuthClientError: each kind has its own code, derived from the kind', () => {
    const kinds = ['denied', 'not_on_mobile_network', 'token_expired', 'unavailable', 'aborted'] as const;
    const codes = kinds.map((kind) => new appSide.NetAuthClientError(kind, 'x').code);
    expect(codes).toEqual([
      'NETAUTH_APP_DENIED',
      'NETAUTH_APP_NOT_ON_MOBILE_NETWORK',
      'NETAUTH_APP_TOKEN_EXPIRED',
      'NETAUTH_APP_UNAVAILABLE',
      'NETAUTH_APP_ABORTED',
    ]);
  });
});
