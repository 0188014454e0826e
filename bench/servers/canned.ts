/**
 * The responses the ceiling servers return: the same JSON shapes (and lengths) express-netauth answers with,
 * built once. No storage, no validation, no randomness.
 */
export const SIM_SWAP_SCOPE = 'dpv:FraudPreventionAndDetection#sim-swap';

export const BC_AUTHORIZE_RESPONSE = { auth_req_id: 'x'.repeat(43), expires_in: 120, interval: 2 };
export const TOKEN_RESPONSE = {
  access_token: 'y'.repeat(43),
  token_type: 'Bearer',
  expires_in: 3600,
  scope: SIM_SWAP_SCOPE,
};
export const SERVICE_RESPONSE = { swapped: false };
/** Workload 2: the code the ceilings' GET /authorize puts in its 302 (any value is accepted by their /token). */
export const AUTHORIZATION_CODE = 'z'.repeat(43);

/** What RFC 6749 §5.1 / CIBA require on both endpoints; the ceilings send them too, so responses match. */
export const NO_STORE_HEADERS = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

/** What express-netauth sends on every frontend-flow response (lib/gateway/http/respond.ts frontendHeaders); the ceilings too. */
export const FRONTEND_HEADERS = {
  'Cache-Control': 'no-store',
  Pragma: 'no-cache',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
} as const;

/**
 * The authorization response (RFC 6749 §4.1.2, RFC 9207) as express-netauth builds it: redirect_uri with
 * `code`, `state` when one was sent, and `iss`. The ceilings echo the request's redirect_uri and state.
 */
export function authorizationRedirect(redirectUri: string, state: string | null | undefined, issuer: string): string {
  const query = new URLSearchParams({ code: AUTHORIZATION_CODE });
  if (state) query.append('state', state);
  query.append('iss', issuer);
  return `${redirectUri}?${query.toString()}`;
}
