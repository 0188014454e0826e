import { OAuthError } from '../errors.js';

/**
 * A requested scope, understood: one W3C DPV purpose and the API scopes it covers.
 * `dpv:FraudPreventionAndDetection#sim-swap` → purpose `FraudPreventionAndDetection`, scopes `["sim-swap"]`.
 * The CAMARA form `dpv:FraudPreventionAndDetection sim-swap:check` → scopes `["sim-swap:check"]`.
 */
export interface RequestedScope {
  purpose: string;
  scopes: string[];
  openid: boolean;
  /**
   * `offline_access` (OIDC Core §11, the CAMARA profile's way to ask for a refresh token): a protocol scope
   * beside the purpose, like `openid`.
   */
  offlineAccess: boolean;
  /** The granted scope string echoed in the token response, in the form it was requested. */
  value: string;
}

// RFC 6749 §3.3 scope-token characters, minus '#' and ':' handled explicitly below.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
/** A DPV purpose name, e.g. `FraudPreventionAndDetection`. */
export const PURPOSE = /^[A-Za-z][A-Za-z0-9]*$/;
/** An API scope, e.g. `sim-swap` or `sim-swap:check`. */
export const API_SCOPE = /^[A-Za-z0-9][A-Za-z0-9:._/-]*$/;

function invalid(description: string): OAuthError {
  return new OAuthError('invalid_scope', description);
}

export function parseScope(value: string): RequestedScope {
  const tokens = value.split(' ').filter((t) => t !== '');
  if (tokens.length === 0) throw new OAuthError('invalid_request', 'scope is required');
  if (value.includes('\t') || value.includes('\n')) throw invalid('scope tokens are separated by single spaces');
  let purpose: string | undefined;
  const scopes: string[] = [];
  const seen = new Set<string>();
  let openid = false;
  let offlineAccess = false;
  // The granted scope string, each token once in the order first sent; a Set keeps the check one step per token.
  const echoed = new Set<string>();

  const setPurpose = (p: string): void => {
    if (!PURPOSE.test(p)) throw invalid(`"${p}" is not a DPV purpose`);
    if (purpose !== undefined && purpose !== p) throw invalid('exactly one purpose per request');
    purpose = p;
  };
  const addScope = (s: string): void => {
    if (!API_SCOPE.test(s)) throw invalid(`"${s}" is not a valid API scope`);
    if (!seen.has(s)) {
      seen.add(s);
      scopes.push(s);
    }
  };

  for (const token of tokens) {
    if (!SCOPE_TOKEN.test(token)) throw invalid('scope contains characters RFC 6749 does not allow');
    if (echoed.has(token)) continue;
    echoed.add(token);
    if (token === 'openid') {
      openid = true;
    } else if (token === 'offline_access') {
      offlineAccess = true;
    } else if (token.startsWith('dpv:')) {
      const rest = token.slice(4);
      const hash = rest.indexOf('#');
      if (hash < 0) {
        setPurpose(rest);
      } else {
        setPurpose(rest.slice(0, hash));
        addScope(rest.slice(hash + 1));
      }
    } else {
      addScope(token);
    }
  }
  if (purpose === undefined) throw invalid('a dpv:<purpose> is required');
  if (scopes.length === 0) throw invalid('no API scope requested');
  return { purpose, scopes, openid, offlineAccess, value: [...echoed].join(' ') };
}

/**
 * The scope without the protocol scopes a grant cannot honour (OIDC Core §11: an `offline_access` that yields no
 * refresh token is left out of what is granted, and so is `openid` where no ID token is issued), so the granted
 * scope string tells the truth.
 */
export function withoutProtocolScopes(
  requested: RequestedScope,
  drop: { openid?: boolean; offlineAccess?: boolean },
): RequestedScope {
  const openid = requested.openid && !drop.openid;
  const offlineAccess = requested.offlineAccess && !drop.offlineAccess;
  const value = requested.value
    .split(' ')
    .filter((token) => (token !== 'openid' || openid) && (token !== 'offline_access' || offlineAccess))
    .join(' ');
  return { ...requested, openid, offlineAccess, value };
}
