import { OAuthError } from '../errors.js';
import { API_SCOPE, PURPOSE } from '../identity/scope.js';
import { checkNames, checkString, describe, isPlainObject, optionNames } from '../option-checks.js';

/**
 * The legal basis for processing a (purpose, scope) pair:
 * `consent` — the subscriber must agree first; `legitimate-interest` — no consent needed;
 * `forbidden` — never, whoever asks.
 */
export type LegalBasis = 'consent' | 'legitimate-interest' | 'forbidden';

/** Per consent rule: whether its consent needs the one-time code from the operator's channel (confirmation.ts). */
export type ConfirmationSetting = 'off' | 'required';

export interface ConsentRule {
  /** DPV purpose, e.g. `FraudPreventionAndDetection`. */
  purpose: string;
  /** API scope, e.g. `sim-swap`. */
  scope: string;
  /**
   * `consent`: the subscriber is asked (consent page or out-of-band) and the answer recorded;
   * `legitimate-interest`: no question; `forbidden`: refused with `access_denied`.
   */
  basis: LegalBasis;
  /**
   * Seconds a consent given for this pair lasts.
   * @defaultValue 31536000 (one year)
   */
  consentLifetime?: number;
  /** Plain words for the consent page, e.g. "check whether your SIM card was recently swapped". */
  description?: string;
  /**
   * `false` for an API that processes no personal data: only then may a client use the client credentials
   * grant for it (a two-legged token, no subscriber; CAMARA).
   * @defaultValue `true`
   */
  personalData?: boolean;
  /** Seconds an access token carrying this scope lives, shorter than `lifetimes.accessToken` (Number Verification: 300). */
  accessTokenLifetime?: number;
  /** Access tokens carrying this scope are good for one API call: the guard consumes them (Number Verification). */
  singleUseAccessToken?: boolean;
  /**
   * `'required'`: consent on the consent page also needs the one-time code the operator sends through
   * `sendConsentConfirmation` (docs/consent.md). Basis `consent` only.
   * Under `profile: 'camara'`, `'required'` for a consent rule (an explicit `'off'` then starts with a warning).
   * @defaultValue `'off'`
   */
  confirmation?: ConfirmationSetting;
  /**
   * `true`: only a subscriber identified by the network (the device's connection) or by an operator token may be
   * granted this scope; a request that names the subscriber by a hint the client supplied (`tel:`, `ipport:`, a
   * JWT-bearer assertion's `sub`) is refused (`access_denied`, or `invalid_grant` for JWT bearer).
   * `true` for the CAMARA Number Verification scopes, and always so under `profile: 'camara'` (docs/consent.md).
   * @defaultValue `false`
   */
  requireNetworkAuthentication?: boolean;
}

export interface ConsentPolicy {
  /** The rule for the pair, or undefined when purpose or scope is unknown (invalid_scope). */
  rule(purpose: string, scope: string): ConsentRule | undefined;
  /** Every known pair, for discovery's scopes_supported. */
  rules(): readonly ConsentRule[];
}

const RULE_FIELDS = optionNames<ConsentRule>({
  purpose: true,
  scope: true,
  basis: true,
  consentLifetime: true,
  description: true,
  personalData: true,
  accessTokenLifetime: true,
  singleUseAccessToken: true,
  confirmation: true,
  requireNetworkAuthentication: true,
});
const BASES: readonly LegalBasis[] = ['consent', 'legitimate-interest', 'forbidden'];

/** One rule as requests will be matched against it: a rule that no request could name is an error now. */
function checkRule(rule: ConsentRule, where: string): void {
  if (!isPlainObject(rule))
    throw new TypeError(`${where} must be an object ({ purpose, scope, basis }), not ${describe(rule)}`);
  checkNames(rule as unknown as Record<string, unknown>, RULE_FIELDS, `${where}.`, 'field');
  if (typeof rule.purpose !== 'string' || !PURPOSE.test(rule.purpose)) {
    throw new TypeError(
      `${where}.purpose must be a DPV purpose name without the dpv: prefix (e.g. FraudPreventionAndDetection)`,
    );
  }
  if (typeof rule.scope !== 'string' || !API_SCOPE.test(rule.scope)) {
    throw new TypeError(`${where}.scope must be an API scope (e.g. sim-swap), without the purpose`);
  }
  if (!BASES.includes(rule.basis))
    throw new TypeError(`${where}.basis must be one of ${BASES.map((b) => `'${b}'`).join(', ')}`);
  const lifetime = rule.consentLifetime;
  if (lifetime !== undefined && !(Number.isInteger(lifetime) && lifetime > 0)) {
    throw new TypeError(`${where}.consentLifetime must be a positive whole number of seconds`);
  }
  checkString(rule.description, `${where}.description`, 'plain words for the consent page');
}

/** A policy from a list of rules, each checked at start-up. */
export class StaticConsentPolicy implements ConsentPolicy {
  private readonly byPair = new Map<string, ConsentRule>();

  constructor(rules: readonly ConsentRule[]) {
    if (!Array.isArray(rules)) throw new TypeError('consentPolicy must be a list of rules or a ConsentPolicy');
    if (rules.length === 0) {
      throw new TypeError(
        'consentPolicy has no rules, so every request would be invalid_scope; add { purpose, scope, basis } for each API',
      );
    }
    rules.forEach((rule, i) => {
      const where = `consentPolicy[${i}]`;
      checkRule(rule, where);
      const pair = `${rule.purpose}#${rule.scope}`;
      // Two rules for one pair: which one applies would depend on the order; say which.
      if (this.byPair.has(pair))
        throw new TypeError(`${where}: a second rule for dpv:${pair}; keep one rule per purpose and scope`);
      this.byPair.set(pair, rule);
    });
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
    if (rule.personalData !== undefined && typeof rule.personalData !== 'boolean')
      throw new TypeError(`${where}: personalData must be true or false`);
    if (rule.personalData === false && rule.basis === 'consent') {
      throw new TypeError(
        `${where}: personalData: false with basis 'consent' cannot work (a client-credentials token has no subscriber to consent); use 'legitimate-interest' or drop personalData`,
      );
    }
    const lifetime = rule.accessTokenLifetime;
    if (lifetime !== undefined && !(Number.isInteger(lifetime) && lifetime > 0 && lifetime <= accessTokenLifetime)) {
      throw new TypeError(
        `${where}: accessTokenLifetime must be a whole number of seconds from 1 to lifetimes.accessToken (${accessTokenLifetime}); it can only shorten tokens`,
      );
    }
    if (rule.singleUseAccessToken !== undefined && typeof rule.singleUseAccessToken !== 'boolean') {
      throw new TypeError(`${where}: singleUseAccessToken must be true or false`);
    }
    if (rule.requireNetworkAuthentication !== undefined && typeof rule.requireNetworkAuthentication !== 'boolean') {
      throw new TypeError(`${where}: requireNetworkAuthentication must be true or false`);
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
