import { createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { CONSENT_CONFIRMATION_DEFAULTS } from '../defaults.js';
import type { Subscriber } from '../identity/subscribers.js';
import { checkNames, describe, isPlainObject, optionNames } from '../option-checks.js';
import type { Store } from '../stores/store.js';
import type { RateLimitRule } from '../ops/rate-limits.js';
import { NO_SLOT, type Reservation } from '../ops/lockout.js';
import type { ConfirmationSetting, ConsentRule } from './policy.js';
import type { ConsentConfirmationChannel } from './registry.js';

/**
 * Confirmation through the operator's channel (CAMARA: consent capture must not allow "background loading and
 * acceptance by a malicious application"). An app on the handset can load the consent page and press Allow
 * itself; it cannot read what the operator sends over SMS, push or USSD. So for a rule with
 * `confirmation: 'required'`, Allow sends a one-time code through `sendConsentConfirmation` and only the code
 * typed back on the page records consent. The code is random, short-lived, kept only as an HMAC under a
 * per-interaction salt, compared in constant time, and a few wrong codes end the interaction.
 */

/** What every `sendConsentConfirmation` context says. */
export interface ConfirmationContextBase {
  /** What is sent: a one-time code the subscriber types on the page. */
  kind: 'code';
  /** Seconds the code is good for. */
  expiresIn: number;
  /** Aborted when `consentConfirmation.sendTimeout` passes: the page then says the code could not be sent. */
  signal: AbortSignal;
}

/** The code that confirms a consent on the consent page (a rule with `confirmation: 'required'`). */
export interface ConsentRequestConfirmation extends ConfirmationContextBase {
  for: 'consent';
  clientId: string;
  /** The application's registered name (its client id when it has none). */
  clientName: string;
  /** DPV purpose, e.g. `FraudPreventionAndDetection`. */
  purpose: string;
  /** The API scopes the consent is for, e.g. `["device-location"]`. */
  scopes: string[];
  /**
   * Those scopes in words for a text message, in `language`: each scope's `message` label
   * (`consentPage.labels`), else its rule's `description`, where it has one.
   */
  descriptions: string[];
  /** The purpose in words for a text message, in `language` (its `message` label, else the DPV name in words). */
  purposeText: string;
  /** The language the page spoke to the subscriber (BCP 47): the message is best sent in it too. */
  language: string;
  /**
   * The message to send, in `language`, from `consentPage.texts.consentMessage`: everything filled in but the
   * code, which goes where `{code}` stands (`message.replace('{code}', code)`).
   */
  message: string;
}

/** The code that opens the subscriber's consents page (`GET {issuer}/consents`): no application is involved. */
export interface ConsentsPageConfirmation extends ConfirmationContextBase {
  for: 'consents';
  /** The language the page spoke to the subscriber (BCP 47). */
  language: string;
  /** The message to send, from `consentPage.texts.consentsMessage`; the code goes where `{code}` stands. */
  message: string;
}

/**
 * What `sendConsentConfirmation` is told besides the subscriber and the code: `for` says which page asks for
 * it, `'consent'` (an application's consent request) or `'consents'` (the subscriber's consents page).
 */
export type ConsentConfirmationContext = ConsentRequestConfirmation | ConsentsPageConfirmation;

/** What a page gives `issue`: the context without what the module adds. */
export type ConfirmationSubject =
  | Omit<ConsentRequestConfirmation, keyof ConfirmationContextBase>
  | Omit<ConsentsPageConfirmation, keyof ConfirmationContextBase>;

/**
 * Sends `code` to the subscriber through the operator's own channel (SMS, push, USSD). Resolves once the
 * channel took the message; a rejection (or the timeout) shows the subscriber a page to try again.
 */
export type SendConsentConfirmation = (
  subscriber: Subscriber,
  code: string,
  context: ConsentConfirmationContext,
) => Promise<void>;

export interface ConsentConfirmationOptions {
  /**
   * Seconds a code is good for.
   * @defaultValue 300
   */
  codeLifetime?: number;
  /**
   * Codes that may be typed for one consent request; the last wrong one ends it (access_denied).
   * @defaultValue 3
   */
  maxAttempts?: number;
  /**
   * Milliseconds `sendConsentConfirmation` may take.
   * @defaultValue 10000
   */
  sendTimeout?: number;
  /**
   * Codes sent to one subscriber, so no application can make the operator flood a line with messages; past it
   * the page asks to wait (429, `Retry-After`). The consent page's codes and the consents page's each have a
   * budget of this size: visits to the consents page never spend the codes that confirm a consent. Counted
   * with the rate limits' counters (shared on Redis); it protects the subscriber's line, not the gateway, so it
   * holds with `rateLimits: false` too. `false` turns it off.
   * @defaultValue 5 per 900 s
   */
  codesPerSubscriber?: RateLimitRule | false;
  /**
   * Wrong codes typed for one subscriber, on both pages and every interaction together, so a script that starts
   * interaction after interaction cannot guess on for long: past it the interaction ends as after `maxAttempts`
   * (`rate.limited` with `limit: 'wrong_codes'`) until the window passes. Only codes typed into an interaction of
   * that subscriber count, which needs the subscriber's own line. Counted and shared like `codesPerSubscriber`,
   * and it holds with `rateLimits: false` too. `false` turns it off.
   * @defaultValue 10 per 86400 s
   */
  wrongCodesPerSubscriber?: RateLimitRule | false;
  /**
   * The channel `sendConsentConfirmation` sends through, as consent records say it (`evidence.confirmation`) and
   * the consents page shows it: `'sms'`, `'push'`, `'ussd'`, or `'operator'` (unspecified).
   * @defaultValue `'operator'`
   */
  channel?: ConsentConfirmationChannel;
}

/** The options resolved: what the module works with. */
export interface ConfirmationSettings {
  codeLifetime: number;
  maxAttempts: number;
  sendTimeout: number;
  /** Undefined: no cap. */
  codesPerSubscriber: RateLimitRule | undefined;
  /** Undefined: no cap. */
  wrongCodesPerSubscriber: RateLimitRule | undefined;
  channel: ConsentConfirmationChannel;
}

const OPTION_NAMES = optionNames<ConsentConfirmationOptions>({
  codeLifetime: true,
  maxAttempts: true,
  sendTimeout: true,
  codesPerSubscriber: true,
  wrongCodesPerSubscriber: true,
  channel: true,
});
const CHANNELS: readonly ConsentConfirmationChannel[] = ['sms', 'push', 'ussd', 'operator'];
const CAP_NAMES: ReadonlySet<string> = new Set(['points', 'duration']);
const SETTINGS: readonly ConfirmationSetting[] = ['off', 'required'];
/**
 * A slot to compare one typed code of a subscriber with (spent when the code is wrong, given back when it is
 * right), or the seconds until the subscriber's wrong codes may be typed again.
 */
export type WrongCodeBudget = (subscriberId: string) => Promise<Reservation>;

/** Digits of a code: what an SMS carries and a person types; three tries in a million. */
const DIGITS = 6;
const CODE = /^[0-9]{6}$/;

function whole(value: unknown, path: string, min: number, max: number, unit: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new TypeError(`${path} must be a whole number of ${unit} from ${min} to ${max}, not ${describe(value)}`);
  return value;
}

/**
 * A rule's `confirmation`, its default resolved: under `profile: 'camara'` a consent rule (basis `'consent'`)
 * requires the code unless it says `'off'` (the profile's consent capture must resist a malicious app on the
 * handset); otherwise `'off'`.
 */
export function confirmationOf(rule: ConsentRule, profile: 'camara' | undefined): ConfirmationSetting {
  if (rule.confirmation !== undefined) return rule.confirmation;
  return profile === 'camara' && rule.basis === 'consent' ? 'required' : 'off';
}

/** Whether a rule's consent needs the code. */
export function requiresConfirmation(rule: ConsentRule | undefined, profile: 'camara' | undefined): boolean {
  return rule !== undefined && confirmationOf(rule, profile) === 'required';
}

/**
 * The rules' `confirmation` settings and the options, checked at start-up: a rule that requires confirmation
 * with no hook to send the code could never record consent.
 */
export function checkConfirmation(
  rules: readonly ConsentRule[],
  send: SendConsentConfirmation | undefined,
  options: ConsentConfirmationOptions | undefined,
  interactionLifetime: number,
  profile: 'camara' | undefined,
): ConfirmationSettings {
  for (const rule of rules) {
    const where = `consent policy rule dpv:${rule.purpose}#${rule.scope}`;
    if (rule.confirmation !== undefined && !SETTINGS.includes(rule.confirmation))
      throw new TypeError(`${where}: confirmation must be 'off' or 'required', not ${describe(rule.confirmation)}`);
    if (rule.confirmation === 'required' && rule.basis !== 'consent') {
      throw new TypeError(
        `${where}: confirmation: 'required' confirms consent, and this rule's basis is '${rule.basis}'; use basis 'consent' or remove confirmation`,
      );
    }
    if (confirmationOf(rule, profile) === 'required' && send === undefined) {
      const why =
        rule.confirmation === 'required'
          ? "confirmation: 'required'"
          : "profile 'camara' requires the operator-channel confirmation of consent (confirmation: 'required' by default)";
      throw new TypeError(
        `${where}: ${why} needs the sendConsentConfirmation option, and none is configured; ` +
          "pass sendConsentConfirmation: async (subscriber, code, context) => { /* your SMS or push */ }, or set confirmation: 'off'" +
          (rule.confirmation === undefined ? ' on the rule (a start-up warning then)' : ''),
      );
    }
  }
  if (options !== undefined && !isPlainObject(options))
    throw new TypeError(`consentConfirmation must be an object, not ${describe(options)}`);
  if (options) checkNames(options, OPTION_NAMES, 'consentConfirmation.');
  const d = CONSENT_CONFIRMATION_DEFAULTS;
  const codeLifetime = whole(options?.codeLifetime, 'consentConfirmation.codeLifetime', 30, 3600, 'seconds');
  return {
    // Never longer than the consent request it confirms.
    codeLifetime: Math.min(codeLifetime ?? d.codeLifetime, interactionLifetime),
    maxAttempts: whole(options?.maxAttempts, 'consentConfirmation.maxAttempts', 1, 10, 'attempts') ?? d.maxAttempts,
    sendTimeout: whole(options?.sendTimeout, 'consentConfirmation.sendTimeout', 1, 120_000, 'ms') ?? d.sendTimeout,
    codesPerSubscriber: codesCap(options?.codesPerSubscriber, 'codesPerSubscriber'),
    wrongCodesPerSubscriber: codesCap(options?.wrongCodesPerSubscriber, 'wrongCodesPerSubscriber'),
    channel: channelOf(options?.channel),
  };
}

function channelOf(value: unknown): ConsentConfirmationChannel {
  if (value === undefined) return 'operator';
  if (!CHANNELS.includes(value as ConsentConfirmationChannel))
    throw new TypeError(
      `consentConfirmation.channel must be 'sms', 'push', 'ussd' or 'operator', not ${typeof value === 'string' ? JSON.stringify(value) : describe(value)}`,
    );
  return value as ConsentConfirmationChannel;
}

function codesCap(
  value: unknown,
  name: 'codesPerSubscriber' | 'wrongCodesPerSubscriber',
): ConfirmationSettings['codesPerSubscriber'] {
  const path = `consentConfirmation.${name}`;
  if (value === false) return undefined;
  if (value === undefined) return { ...CONSENT_CONFIRMATION_DEFAULTS[name] };
  if (!isPlainObject(value))
    throw new TypeError(`${path} must be { points, duration } or false, not ${describe(value)}`);
  checkNames(value, CAP_NAMES, `${path}.`);
  return {
    points: whole(value.points, `${path}.points`, 1, 1000, 'codes') ?? missing(`${path}.points`),
    duration: whole(value.duration, `${path}.duration`, 1, 86_400, 'seconds') ?? missing(`${path}.duration`),
  };
}

function missing(path: string): never {
  throw new TypeError(`${path} is required`);
}

/** The code's record: only its HMAC, under a salt of this interaction's own. */
interface CodeRecord {
  [key: string]: string | number;
  hash: string;
  salt: string;
  expiresAt: number;
}

/** How one typed code fared. `malformed` (not six digits) costs no attempt: it cannot be a guess. */
export type CodeCheck =
  | { result: 'confirmed' }
  | { result: 'wrong'; attemptsLeft: number }
  | { result: 'malformed' }
  | { result: 'none_sent' }
  | { result: 'expired' }
  | { result: 'exhausted' }
  /** The subscriber's wrong codes reached `wrongCodesPerSubscriber`: nothing was compared. */
  | { result: 'capped'; retryAfter: number };

/** Why a code could not be sent: the hook rejected, or took longer than `sendTimeout`. */
export type SendFailure = 'error' | 'timeout';

/**
 * What `issue` did: sent a code, found one out already, failed to send (nothing left behind), or found the
 * subscriber's cap of codes reached (`retryAfter` seconds until the next may go).
 */
export type IssueResult = { result: 'sent' | 'already_sent' | SendFailure } | { result: 'capped'; retryAfter: number };

/**
 * Counts one code sent to a subscriber for one page (`'consent'` or `'consents'`, each with a budget of its own):
 * seconds to wait when over the cap, else undefined.
 */
export type CodeCap = (subscriberId: string, page: ConsentConfirmationContext['for']) => Promise<number | undefined>;

function digest(salt: string, code: string): Buffer {
  return createHmac('sha256', Buffer.from(salt, 'base64url')).update(code, 'utf8').digest();
}

/**
 * Codes per interaction, in the store: what the consent page asks of it for a consent request, and the
 * consents page for the subscriber's list (its interaction: the browser's visit).
 */
export class ConsentConfirmation {
  constructor(
    private readonly store: Store,
    private readonly send: SendConsentConfirmation | undefined,
    readonly settings: ConfirmationSettings,
    private readonly now: () => number,
    /** The per-subscriber cap of codes sent; none when undefined. */
    private readonly cap: CodeCap | undefined,
    /** The per-subscriber cap of wrong codes typed; none when undefined. */
    private readonly wrongCodes?: WrongCodeBudget,
  ) {}

  /** Whether the operator's channel is configured: the consents page then asks for a code too. */
  get enabled(): boolean {
    return this.send !== undefined;
  }

  private codeId(interaction: string): string {
    return `${interaction}:code`;
  }

  /** Whether a code is out for this interaction (the page then asks for it). */
  async sent(interaction: string): Promise<boolean> {
    return (await this.store.get('interaction', this.codeId(interaction))) !== undefined;
  }

  /**
   * Sends a new code, unless one is out already (a second Allow, or two at once: `add` lets one through, so
   * the subscriber gets one message) or the subscriber's cap is reached. `ttl` is the interaction's. A failed
   * send leaves nothing behind: the subscriber can try again (it counts towards the cap: a message may have
   * gone out before the timeout).
   */
  async issue(
    interaction: string,
    subscriber: Subscriber,
    subject: ConfirmationSubject,
    ttl: number,
  ): Promise<IssueResult> {
    const send = this.send;
    if (send === undefined) throw new Error('express-netauth: a confirmation is required but no hook sends it');
    const code = String(randomInt(0, 10 ** DIGITS)).padStart(DIGITS, '0');
    const salt = randomBytes(16).toString('base64url');
    const record: CodeRecord = {
      hash: digest(salt, code).toString('base64url'),
      salt,
      expiresAt: this.now() + this.settings.codeLifetime * 1000,
    };
    if (!(await this.store.add('interaction', this.codeId(interaction), record, { ttl })))
      return { result: 'already_sent' };
    const retryAfter = await this.cap?.(subscriber.id, subject.for);
    if (retryAfter !== undefined) {
      await this.store.delete('interaction', this.codeId(interaction));
      return { result: 'capped', retryAfter };
    }
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.settings.sendTimeout);
    });
    let outcome: 'sent' | SendFailure;
    try {
      const context: ConsentConfirmationContext = {
        ...subject,
        kind: 'code',
        expiresIn: this.settings.codeLifetime,
        signal: abort.signal,
      };
      const delivery = send(
        subscriber.phoneNumber === undefined ? { id: subscriber.id } : { ...subscriber },
        code,
        context,
      ).then(() => 'sent' as const);
      outcome = await Promise.race([delivery, timeout]);
      // A late rejection after the timeout is the channel's; nothing waits for it.
      delivery.catch(() => {});
    } catch {
      // The hook's error may quote the number or the code: it is not passed on (the event says what failed).
      outcome = 'error';
    } finally {
      clearTimeout(timer);
    }
    if (outcome === 'timeout') abort.abort();
    if (outcome !== 'sent') await this.store.delete('interaction', this.codeId(interaction));
    return { result: outcome };
  }

  /**
   * Checks a typed code of `subscriberId`'s interaction. Each check first takes a slot of the subscriber's wrong
   * codes (`wrongCodesPerSubscriber`) and one of the interaction's `maxAttempts` slots with the store's `add` (atomic
   * on every store), so parallel guesses cannot test more codes than the slots allow, on any number of instances.
   */
  async check(interaction: string, typed: string, ttl: number, subscriberId: string): Promise<CodeCheck> {
    const code = typed.replace(/[\s-]/g, '');
    if (!CODE.test(code)) return { result: 'malformed' };
    const stored = await this.store.get<CodeRecord>('interaction', this.codeId(interaction));
    if (stored === undefined) return { result: 'none_sent' };
    if (stored.value.expiresAt <= this.now()) return { result: 'expired' };
    // The subscriber's budget of wrong codes, reserved before the comparison (parallel guesses cannot pass it). A
    // shared counter that cannot be reached compares uncounted: the interaction's own attempts still bound it.
    const reservation = (await this.wrongCodes?.(subscriberId)) ?? { slot: NO_SLOT };
    if ('retryAfter' in reservation && reservation.unavailable !== true)
      return { result: 'capped', retryAfter: reservation.retryAfter };
    const slot = 'slot' in reservation ? reservation.slot : NO_SLOT;
    let attempt: number | undefined;
    try {
      attempt = await this.takeAttempt(interaction, ttl);
    } finally {
      // No attempt left (or the store failed): nothing was compared, the subscriber's slot goes back.
      if (attempt === undefined) slot.release();
    }
    if (attempt === undefined) return { result: 'exhausted' };
    const expected = Buffer.from(stored.value.hash, 'base64url');
    const actual = digest(stored.value.salt, code);
    if (expected.length === actual.length && timingSafeEqual(expected, actual)) {
      slot.release();
      return { result: 'confirmed' };
    }
    await slot.spend();
    const max = this.settings.maxAttempts;
    return attempt === max ? { result: 'exhausted' } : { result: 'wrong', attemptsLeft: max - attempt };
  }

  /** One of the interaction's `maxAttempts` slots, taken with the store's atomic `add`: its number, or undefined. */
  private async takeAttempt(interaction: string, ttl: number): Promise<number | undefined> {
    for (let n = 1; n <= this.settings.maxAttempts; n++) {
      if (await this.store.add('interaction', `${interaction}:attempt${n}`, {}, { ttl })) return n;
    }
    return undefined;
  }

  /** Forgets the code once the interaction is answered: it is never good again. */
  async discard(interaction: string): Promise<void> {
    await this.store.delete('interaction', this.codeId(interaction));
  }
}
