import { OAuthError } from '../errors.js';

/**
 * The legal basis for processing a (purpose, scope) pair:
 * `consent` — the subscriber must agree first; `legitimate-interest` — no consent needed;
 * `forbidden` — never, whoever asks.
 */
export type LegalBasis = 'consent' | 'legitimate-interest' | 'forbidden';

export interface ConsentRule {
  /** DPV purpose, e.g. `FraudPreventionAndDetection`. */
  purpose: string;
  /** API scope, e.g. `sim-swap`. */
  scope: string;
  basis: LegalBasis;
  /** Seconds a consent given for this pair lasts. Default: the policy's default (one year). */
  consentLifetime?: number;
  /** Plain words for the consent page, e.g. "check whether your SIM card was recently swapped". */
  description?: string;
  /**
   * `false` for an API that processes no personal data: only then may a client use the client credentials
   * grant for it (a two-legged token, no subscriber; CAMARA). Default `true`.
   */
  personalData?: boolean;
  /** Seconds an access token carrying this scope lives, shorter than `lifetimes.accessToken` (Number Verification: 300). */
  accessTokenLifetime?: number;
  /** Access tokens carrying this scope are good for one API call: the guard consumes them (Number Verification). */
  singleUseAccessToken?: boolean;
}

export interface ConsentPolicy {
  /** The rule for the pair, or undefined when purpose or scope is unknown (invalid_scope). */
  rule(purpose: string, scope: string): ConsentRule | undefined;
  /** Every known pair, for discovery's scopes_supported. */
  rules(): readonly ConsentRule[];
}

export const DEFAULT_CONSENT_LIFETIME = 365 * 24 * 3600;

export class StaticConsentPolicy implements ConsentPolicy {
  private readonly byPair = new Map<string, ConsentRule>();

  constructor(rules: readonly ConsentRule[]) {
    for (const rule of rules) this.byPair.set(`${rule.purpose}#${rule.scope}`, rule);
  }

  rule(purpose: string, scope: string): ConsentRule | undefined {
    return this.byPair.get(`${purpose}#${scope}`);
  }

  rules(): readonly ConsentRule[] {
    return [...this.byPair.values()];
  }
}

/**
 * The rules' token fields, checked at start-up: each is of its type, a lifetime only shortens the access-token
 * lifetime, and a rule for no personal data rests on no consent (a two-legged token has no subscriber to give it).
 */
export function checkTokenRules(rules: readonly ConsentRule[], accessTokenLifetime: number): void {
  for (const rule of rules) {
    const where = `consent policy rule dpv:${rule.purpose}#${rule.scope}`;
    if (rule.personalData !== undefined && typeof rule.personalData !== 'boolean') throw new TypeError(`${where}: personalData must be true or false`);
    if (rule.personalData === false && rule.basis === 'consent') {
      throw new TypeError(`${where}: personalData: false with basis 'consent' cannot work (a client-credentials token has no subscriber to consent); use 'legitimate-interest' or drop personalData`);
    }
    const lifetime = rule.accessTokenLifetime;
    if (lifetime !== undefined && !(Number.isInteger(lifetime) && lifetime > 0 && lifetime <= accessTokenLifetime)) {
      throw new TypeError(`${where}: accessTokenLifetime must be a whole number of seconds from 1 to lifetimes.accessToken (${accessTokenLifetime}); it can only shorten tokens`);
    }
    if (rule.singleUseAccessToken !== undefined && typeof rule.singleUseAccessToken !== 'boolean') {
      throw new TypeError(`${where}: singleUseAccessToken must be true or false`);
    }
  }
}

/** The rules of a request; the strictest basis wins: forbidden, then consent, then legitimate interest. */
export function rulesFor(policy: ConsentPolicy, purpose: string, scopes: readonly string[]): ConsentRule[] {
  return scopes.map((scope) => {
    const rule = policy.rule(purpose, scope);
    if (!rule) throw new OAuthError('invalid_scope', `unknown purpose or scope: dpv:${purpose}#${scope}`);
    return rule;
  });
}

export function strictestBasis(rules: readonly ConsentRule[]): LegalBasis {
  if (rules.some((r) => r.basis === 'forbidden')) return 'forbidden';
  if (rules.some((r) => r.basis === 'consent')) return 'consent';
  return 'legitimate-interest';
}
