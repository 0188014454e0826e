import type { ConsentPolicy } from '../consent/policy.js';
import { API_SCOPE, PURPOSE } from '../identity/scope.js';
import { checkOptionObject, optionNames } from '../option-checks.js';
import { checkRealm } from '../gateway/options-check.js';
import type { GuardOptions } from './guard.js';

const GUARD = optionNames<GuardOptions>({
  scope: true,
  purpose: true,
  realm: true,
  revocation: true,
  subscriber: true,
  errorFormat: true,
  device: true,
  publicOrigin: true,
  dpopClaimsRequired: true,
});

function scopeList(value: string | readonly string[] | undefined, path: string, pattern: RegExp): readonly string[] {
  const list = value === undefined ? [] : typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.some((v) => typeof v !== 'string' || !pattern.test(v))) {
    const example =
      pattern === API_SCOPE
        ? "an API scope ('sim-swap'; the purpose goes in purpose)"
        : "a DPV purpose ('FraudPreventionAndDetection')";
    throw new TypeError(`guard ${path} must be ${example} or a list of them`);
  }
  return list;
}

/**
 * `netauth.guard(options)`, checked when the middleware is made: a scope or purpose no consent policy rule
 * knows could never be in a token, so every request would be refused.
 */
export function checkGuardOptions(options: GuardOptions | undefined, policy: ConsentPolicy): void {
  checkOptionObject(options, 'guard', GUARD);
  if (options === undefined) return;
  const rules = policy.rules();
  for (const scope of scopeList(options.scope, 'scope', API_SCOPE)) {
    if (!rules.some((r) => r.scope === scope)) {
      throw new TypeError(
        `guard scope '${scope}' is in no consentPolicy rule, so no token could carry it; correct it or add a rule`,
      );
    }
  }
  for (const purpose of scopeList(options.purpose, 'purpose', PURPOSE)) {
    if (!rules.some((r) => r.purpose === purpose)) {
      throw new TypeError(
        `guard purpose '${purpose}' is in no consentPolicy rule, so no token could carry it; correct it or add a rule`,
      );
    }
  }
  checkRealm(options.realm, 'guard realm');
}
