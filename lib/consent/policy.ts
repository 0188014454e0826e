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
