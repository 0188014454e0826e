/**
 * The responses the ceiling servers return: the same JSON shapes (and lengths) express-netauth answers with,
 * built once. No storage, no validation, no randomness.
 */
export const SIM_SWAP_SCOPE = 'dpv:FraudPreventionAndDetection#sim-swap';

export const BC_AUTHORIZE_RESPONSE = { auth_req_id: 'x'.repeat(43), expires_in: 120, interval: 2 };
export const TOKEN_RESPONSE = { access_token: 'y'.repeat(43), token_type: 'Bearer', expires_in: 3600, scope: SIM_SWAP_SCOPE };
export const SERVICE_RESPONSE = { swapped: false };

/** What RFC 6749 §5.1 / CIBA require on both endpoints; the ceilings send them too, so responses match. */
export const NO_STORE_HEADERS = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;
