import type { ConsentPolicy, ConsentRule } from './policy.js';

/**
 * CAMARA Number Verification's scopes: those of its releases since r1.1, and the v0.3 names
 * (`number-verification-verify-read`, `number-verification-share-read`). The API definition asks of tokens that
 * carry one: a single API call, at most 300 s, never a refresh token; and a subscriber identified by the network
 * (or the SIM, an operator token), never by what the client says.
 */
export const NUMBER_VERIFICATION_SCOPES: ReadonlySet<string> = new Set([
  'number-verification:verify',
  'number-verification:device-phone-number:read',
  'number-verification-verify-read',
  'number-verification-share-read',
]);

/** The longest an access token carrying a Number Verification scope may live (the API definition: 300 s). */
export const NUMBER_VERIFICATION_TOKEN_LIFETIME = 300;

export function isNumberVerificationScope(scope: string): boolean {
  return NUMBER_VERIFICATION_SCOPES.has(scope);
}

/**
 * A Number Verification rule as the gateway applies it. `requireNetworkAuthentication` is on unless the rule
 * says `false`; under `profile: 'camara'` the API definition's rules hold whatever the rule says: single use, at
 * most 300 s, network authentication required.
 */
function numberVerificationRule(rule: ConsentRule, camara: boolean): ConsentRule {
  if (!camara) return { ...rule, requireNetworkAuthentication: rule.requireNetworkAuthentication ?? true };
  return {
    ...rule,
    singleUseAccessToken: true,
    accessTokenLifetime: Math.min(
      rule.accessTokenLifetime ?? Number.POSITIVE_INFINITY,
      NUMBER_VERIFICATION_TOKEN_LIFETIME,
    ),
    requireNetworkAuthentication: true,
  };
}

/**
 * The policy with Number Verification's rules applied to its rules for the NV scopes (each rule object made once),
 * the others as they are: what every module reads through the gateway's context.
 */
export function withNumberVerificationRules(policy: ConsentPolicy, camara: boolean): ConsentPolicy {
  const applied = new WeakMap<ConsentRule, ConsentRule>();
  const apply = (rule: ConsentRule): ConsentRule => {
    if (!isNumberVerificationScope(rule.scope)) return rule;
    let nv = applied.get(rule);
    if (nv === undefined) {
      nv = numberVerificationRule(rule, camara);
      applied.set(rule, nv);
    }
    return nv;
  };
  return {
    rule(purpose, scope) {
      const rule = policy.rule(purpose, scope);
      return rule === undefined ? undefined : apply(rule);
    },
    rules: () => policy.rules().map(apply),
  };
}

/**
 * Without the preset, what a rule for a Number Verification scope says against the API definition: one sentence
 * per rule, for the start-up warnings (none under the preset, which applies the definition's rules itself).
 */
export function numberVerificationFindings(rules: readonly ConsentRule[]): string[] {
  const findings: string[] = [];
  for (const rule of rules) {
    if (!isNumberVerificationScope(rule.scope)) continue;
    const off: string[] = [];
    if (rule.singleUseAccessToken !== true) off.push('singleUseAccessToken: true');
    if (rule.accessTokenLifetime === undefined || rule.accessTokenLifetime > NUMBER_VERIFICATION_TOKEN_LIFETIME)
      off.push(`accessTokenLifetime of at most ${NUMBER_VERIFICATION_TOKEN_LIFETIME}`);
    if (rule.requireNetworkAuthentication === false) off.push('requireNetworkAuthentication left on');
    if (off.length === 0) continue;
    findings.push(
      `consent policy rule dpv:${rule.purpose}#${rule.scope} is a CAMARA Number Verification scope, whose tokens must be ` +
        `single use, live at most ${NUMBER_VERIFICATION_TOKEN_LIFETIME} s and rest on network authentication; the rule lacks ` +
        `${off.join(', ')}. Add it, or set profile: 'camara', which applies these rules to the Number Verification scopes.`,
    );
  }
  return findings;
}
