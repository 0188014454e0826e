import ipaddr from 'ipaddr.js';
import { checkTokenRules, type ConsentPolicy } from '../consent/policy.js';
import { confirmationOf } from '../consent/confirmation.js';
import { numberVerificationFindings } from '../consent/number-verification.js';
import { E164 } from '../identity/login-hint.js';
import {
  CLIENT_AUTH_METHODS,
  registeredScope,
  StaticClientRegistry,
  type ClientRegistry,
  type RegisteredClient,
} from '../registry/clients.js';
import { CONFIRMATION_TEXTS } from './http/confirmation-texts.js';
import type { FailureLimitRule, RateLimitOptions, RateLimitRule, SubscriberLimitRules } from '../ops/rate-limits.js';
import type { StartupWarning } from '../ops/logging.js';
import { dpopClaimsOption } from './tokens/dpop-binding.js';
import { checkProfile } from '../registry/client-checks.js';
import { MemoryStore } from '../stores/memory.js';
import {
  checkBoolean,
  checkFunction,
  checkImplements,
  checkNames,
  checkOptionObject,
  checkString,
  describe,
  isPlainObject,
  optionNames,
} from '../option-checks.js';
import type {
  BackchannelOptions,
  ClientJwksOptions,
  ConsentPageOptions,
  ConsentPageTexts,
  Lifetimes,
  NetAuthMode,
  NetAuthOptions,
  NetworkOptions,
  SandboxOptions,
} from './options.js';

/**
 * Start-up validation of `createNetAuth`'s options: everything that can be checked before the first request
 * is checked here or by the module that owns the option (the client registry, the consent policy, the
 * subscriber table, the network ranges, the consent page, the keys, the rate limits), so a configuration
 * that cannot work fails at start-up with a TypeError naming the option and the fix, and one that works but
 * not as production needs is a warning then rather than hours later.
 */

const OPTIONS = optionNames<NetAuthOptions>({
  issuer: true,
  profile: true,
  mode: true,
  clients: true,
  subscribers: true,
  consentPolicy: true,
  store: true,
  consentRegistry: true,
  lifetimes: true,
  backchannel: true,
  sandbox: true,
  network: true,
  consentPage: true,
  sendConsentConfirmation: true,
  consentConfirmation: true,
  signingKeys: true,
  idTokens: true,
  clockTolerance: true,
  dpopClaimsRequired: true,
  accessTokenFormat: true,
  accessTokenAudience: true,
  pairwiseSalt: true,
  realm: true,
  bodyLimit: true,
  clientJwks: true,
  rateLimits: true,
  logger: true,
  onError: true,
  now: true,
});
const LIFETIMES = optionNames<Lifetimes>({
  code: true,
  authReqId: true,
  pollInterval: true,
  accessToken: true,
  backendAccessToken: true,
  refreshToken: true,
  expiredRetention: true,
  interaction: true,
  redemptionRetry: true,
});
const BACKCHANNEL = optionNames<BackchannelOptions>({ authorize: true, onConsentRequired: true });
const SANDBOX = optionNames<SandboxOptions>({ allowList: true });
const NETWORK = optionNames<NetworkOptions>({ mobileRanges: true, portHeader: true });
const CONSENT_PAGE = optionNames<ConsentPageOptions>({
  operatorName: true,
  primaryColor: true,
  primaryTextColor: true,
  backgroundColor: true,
  textColor: true,
  logoUrl: true,
  language: true,
  privacyPolicyUrl: true,
  texts: true,
  labels: true,
  languages: true,
  noticeVersion: true,
  cookieName: true,
  cookiePath: true,
  cookieSecret: true,
});
/** The confirmation step's texts are part of consentPage.texts. */
const CONFIRMATION_TEXT_NAMES = Object.fromEntries(Object.keys(CONFIRMATION_TEXTS).map((k) => [k, true])) as Record<
  keyof typeof CONFIRMATION_TEXTS,
  true
>;
const TEXTS = optionNames<ConsentPageTexts>({
  title: true,
  intro: true,
  purposeLabel: true,
  scopeLabel: true,
  allow: true,
  deny: true,
  footer: true,
  consentsLink: true,
  errorTitle: true,
  errorRequest: true,
  errorDenied: true,
  errorUnavailable: true,
  errorServer: true,
  errorDetail: true,
  answeredAllow: true,
  answeredDeny: true,
  returnLink: true,
  ...CONFIRMATION_TEXT_NAMES,
  consentsTitle: true,
  consentsIntro: true,
  consentsEmpty: true,
  consentsGiven: true,
  consentsViaPage: true,
  consentsConfirmed: true,
  consentsViaOperator: true,
  consentsViaRegistry: true,
  withdraw: true,
  withdrawn: true,
  notIdentifiedTitle: true,
  notIdentified: true,
});
const CLIENT_JWKS = optionNames<ClientJwksOptions>({
  fetchTimeout: true,
  maxBytes: true,
  cacheMaxAge: true,
  internalOrigins: true,
});
const RATE_LIMITS = optionNames<RateLimitOptions>({
  backend: true,
  redis: true,
  keyPrefix: true,
  timeout: true,
  authorize: true,
  bcAuthorize: true,
  token: true,
  clientCredentials: true,
  dpopProofs: true,
  clientAuthentication: true,
});
const CLIENT_CREDENTIALS_LIMITS = optionNames<NonNullable<RateLimitOptions['clientCredentials']>>({ perClient: true });
const DPOP_PROOF_LIMITS = optionNames<NonNullable<RateLimitOptions['dpopProofs']>>({ perKey: true, perClient: true });
const AUTHORIZE_LIMITS = optionNames<NonNullable<RateLimitOptions['authorize']>>({ perAddress: true });
const CLIENT_AUTHENTICATION_LIMITS = optionNames<NonNullable<RateLimitOptions['clientAuthentication']>>({
  perClientAndAddress: true,
  perAddress: true,
});
const SUBSCRIBER_LIMITS = optionNames<SubscriberLimitRules>({
  perClient: true,
  perClientAndSubscriber: true,
  perSubscriber: true,
});
const RATE_RULE = optionNames<RateLimitRule>({ points: true, duration: true });
const FAILURE_RULE = optionNames<FailureLimitRule>({ failures: true, duration: true });

/** Former option names, and what replaced them. */
const GONE_CLIENT_AUTHENTICATION = {
  perClient: 'failures now count per client id and address; use perClientAndAddress',
};

/** What `bytes` (body-parser's size parser) reads: a whole number of bytes, or a number with a unit. */
const BYTE_SIZE = /^(?:\d+|\d+(?:\.\d+)? *(?:b|kb|mb|gb|tb|pb))$/i;
/** What a `WWW-Authenticate` header can carry: printable ASCII (a control character would fail every 401). */
const HEADER_TEXT = /^[\x20-\x7e]+$/;

const STORE_METHODS = ['put', 'get', 'add', 'consume', 'delete', 'revokeGrant'];
const LOGGER_METHODS = ['child', 'isLevelEnabled', 'debug', 'info', 'warn', 'error'];

function checkIssuer(value: unknown): void {
  if (typeof value !== 'string')
    throw new TypeError(
      `issuer must be the absolute URL where the router is mounted (e.g. https://gw.example.com/apigateway), not ${describe(value)}`,
    );
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError('issuer must be an absolute URL (e.g. https://gw.example.com/apigateway)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TypeError(`issuer must be an https: URL (http: for development), not ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw new TypeError('issuer must not carry credentials');
  // OIDC Discovery §4.3, RFC 8414 §3.3: clients compare the issuer as an exact string, so it is never rewritten.
  if (value.endsWith('/')) {
    throw new TypeError(
      `issuer must not end with '/': clients compare it exactly (as a string) with what discovery publishes; ` +
        `give ${JSON.stringify(value.replace(/\/+$/, ''))}`,
    );
  }
}

/** A realm for `WWW-Authenticate` (`realm`, and the guard's). */
export function checkRealm(value: unknown, path: string): void {
  if (value !== undefined && (typeof value !== 'string' || !HEADER_TEXT.test(value))) {
    throw new TypeError(`${path} must be a non-empty string of printable ASCII: it is sent in WWW-Authenticate`);
  }
}

function checkBodyLimit(value: unknown): void {
  if (value === undefined) return;
  const ok =
    typeof value === 'number'
      ? Number.isInteger(value) && value > 0
      : typeof value === 'string' && BYTE_SIZE.test(value.trim()) && parseFloat(value) > 0;
  // body-parser reads an unparsable size as "no limit": refused here rather than silently unlimited.
  if (!ok)
    throw new TypeError(
      `bodyLimit must be a positive number of bytes or a size such as '16kb', not ${JSON.stringify(value)}`,
    );
}

function checkClockTolerance(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 60) {
    const shown = typeof value === 'number' ? String(value) : describe(value);
    throw new TypeError(
      `clockTolerance must be a whole number of seconds from 0 to 60 (0: the CAMARA profile's reading), not ${shown}`,
    );
  }
}

function checkSandbox(sandbox: SandboxOptions | undefined): void {
  checkOptionObject(sandbox, 'sandbox', SANDBOX);
  if (sandbox === undefined) return;
  if (!Array.isArray(sandbox.allowList))
    throw new TypeError('sandbox.allowList must be a list of lines (+<E.164> or tel:+<E.164>)');
  if (sandbox.allowList.length === 0)
    throw new TypeError('sandbox.allowList is empty, so no line could be used; list the sandbox lines');
  sandbox.allowList.forEach((line, i) => {
    const number = typeof line === 'string' && line.startsWith('tel:') ? line.slice(4) : line;
    if (typeof number !== 'string' || !E164.test(number)) {
      throw new TypeError(`sandbox.allowList[${i}] must be +<E.164> or tel:+<E.164> (e.g. +34600000001)`);
    }
  });
}

function checkConsentPage(page: ConsentPageOptions | undefined): void {
  checkOptionObject(page, 'consentPage', CONSENT_PAGE);
  if (page === undefined) return;
  checkString(page.operatorName, 'consentPage.operatorName', 'shown on the page');
  checkOptionObject(page.texts, 'consentPage.texts', TEXTS);
  if (page.texts === undefined) return;
  for (const [name, text] of Object.entries(page.texts)) {
    if (typeof text !== 'string')
      throw new TypeError(`consentPage.texts.${name} must be a string, not ${describe(text)}`);
  }
}

function checkRule(value: unknown, path: string, names: ReadonlySet<string>): void {
  if (value !== false) checkOptionObject(value, path, names);
}

function checkRateLimits(limits: NetAuthOptions['rateLimits']): void {
  if (limits === false || limits === undefined) return;
  checkOptionObject(limits, 'rateLimits', RATE_LIMITS);
  checkString(limits.keyPrefix, 'rateLimits.keyPrefix', 'a Redis key prefix');
  if (limits.redis !== undefined) {
    checkImplements(
      limits.redis,
      'rateLimits.redis',
      ['sendCommand'],
      'be a node-redis client: createClient(), createCluster() or createSentinel()',
    );
  }
  checkOptionObject(limits.authorize, 'rateLimits.authorize', AUTHORIZE_LIMITS);
  checkRule(limits.authorize?.perAddress, 'rateLimits.authorize.perAddress', RATE_RULE);
  for (const group of ['bcAuthorize', 'token'] as const) {
    const rules = limits[group];
    checkOptionObject(rules, `rateLimits.${group}`, SUBSCRIBER_LIMITS);
    if (rules === undefined) continue;
    for (const name of SUBSCRIBER_LIMITS)
      checkRule(rules[name as keyof SubscriberLimitRules], `rateLimits.${group}.${name}`, RATE_RULE);
  }
  checkOptionObject(limits.clientCredentials, 'rateLimits.clientCredentials', CLIENT_CREDENTIALS_LIMITS);
  checkRule(limits.clientCredentials?.perClient, 'rateLimits.clientCredentials.perClient', RATE_RULE);
  checkOptionObject(limits.dpopProofs, 'rateLimits.dpopProofs', DPOP_PROOF_LIMITS);
  checkRule(limits.dpopProofs?.perKey, 'rateLimits.dpopProofs.perKey', RATE_RULE);
  checkRule(limits.dpopProofs?.perClient, 'rateLimits.dpopProofs.perClient', RATE_RULE);
  const auth = limits.clientAuthentication;
  checkOptionObject(auth, 'rateLimits.clientAuthentication', CLIENT_AUTHENTICATION_LIMITS, GONE_CLIENT_AUTHENTICATION);
  checkRule(auth?.perClientAndAddress, 'rateLimits.clientAuthentication.perClientAndAddress', FAILURE_RULE);
  checkRule(auth?.perAddress, 'rateLimits.clientAuthentication.perAddress', FAILURE_RULE);
}

function checkClients(clients: unknown): void {
  if (Array.isArray(clients)) return; // each registration: StaticClientRegistry
  checkImplements(clients, 'clients', ['find'], 'be a list of registrations or a ClientRegistry with find(clientId)');
  const methods = (clients as ClientRegistry).authMethods;
  if (methods !== undefined && !(Array.isArray(methods) && methods.every((m) => CLIENT_AUTH_METHODS.includes(m)))) {
    throw new TypeError(
      `clients.authMethods must list the methods your clients use, from ${CLIENT_AUTH_METHODS.join(', ')}`,
    );
  }
}

/**
 * The options' shapes: every name known, every value of its type, every hook a function, every interface
 * implemented. Runs before anything is built. Values the owning module checks (colours, CIDR ranges, keys,
 * rule numbers) are left to it.
 */
export function checkOptions(options: NetAuthOptions): void {
  if (!isPlainObject(options))
    throw new TypeError(
      'createNetAuth needs an object of options ({ issuer, clients, subscribers, consentPolicy, ... })',
    );
  checkNames(options, OPTIONS, '');
  checkIssuer(options.issuer);
  checkClients(options.clients);
  if (!Array.isArray(options.subscribers)) {
    checkImplements(
      options.subscribers,
      'subscribers',
      ['findByPhoneNumber', 'findByNetworkAddress'],
      'be a list of subscribers or a SubscriberDirectory',
    );
    checkFunction(
      (options.subscribers as { findByOperatorToken?: unknown }).findByOperatorToken,
      'subscribers.findByOperatorToken',
      '(token) => Promise<Subscriber | undefined>',
    );
  }
  if (!Array.isArray(options.consentPolicy)) {
    checkImplements(
      options.consentPolicy,
      'consentPolicy',
      ['rule', 'rules'],
      'be a list of rules or a ConsentPolicy with rule(purpose, scope) and rules()',
    );
  }
  if (options.store !== undefined) {
    checkImplements(
      options.store,
      'store',
      STORE_METHODS,
      `implement the Store contract (${STORE_METHODS.join(', ')}), as MemoryStore and RedisStore do`,
    );
  }
  if (options.consentRegistry !== undefined) {
    checkImplements(
      options.consentRegistry,
      'consentRegistry',
      ['grant', 'deny', 'revoke', 'find', 'list'],
      'implement the ConsentRegistry contract (grant, deny, revoke, find, list)',
    );
  }
  checkOptionObject(options.lifetimes, 'lifetimes', LIFETIMES);
  checkOptionObject(options.backchannel, 'backchannel', BACKCHANNEL);
  checkFunction(options.backchannel?.authorize, 'backchannel.authorize', "(request) => Promise<'approve' | 'deny'>");
  checkFunction(
    options.backchannel?.onConsentRequired,
    'backchannel.onConsentRequired',
    '(request) => void | Promise<void>',
  );
  checkSandbox(options.sandbox);
  checkOptionObject(options.network, 'network', NETWORK);
  checkConsentPage(options.consentPage);
  checkFunction(
    options.sendConsentConfirmation,
    'sendConsentConfirmation',
    '(subscriber, code, context) => Promise<void>',
  );
  if (options.signingKeys !== undefined && !Array.isArray(options.signingKeys))
    throw new TypeError('signingKeys must be a list of private JWKs');
  if (options.profile !== undefined && options.profile !== 'camara') {
    const shown = typeof options.profile === 'string' ? `'${options.profile}'` : describe(options.profile);
    throw new TypeError(`profile must be 'camara' (the CAMARA Security and Interoperability Profile), not ${shown}`);
  }
  if (options.mode !== undefined && options.mode !== 'production' && options.mode !== 'development') {
    const shown = typeof options.mode === 'string' ? `'${options.mode}'` : describe(options.mode);
    throw new TypeError(`mode must be 'production' or 'development' (default: from NODE_ENV), not ${shown}`);
  }
  checkBoolean(options.idTokens, 'idTokens');
  checkClockTolerance(options.clockTolerance);
  dpopClaimsOption(options.dpopClaimsRequired, 'dpopClaimsRequired');
  checkString(options.accessTokenAudience, 'accessTokenAudience', 'the aud of JWT access tokens');
  checkString(options.pairwiseSalt, 'pairwiseSalt', 'a secret, the same on every instance');
  checkRealm(options.realm, 'realm');
  checkBodyLimit(options.bodyLimit);
  checkOptionObject(options.clientJwks, 'clientJwks', CLIENT_JWKS);
  if (options.rateLimits !== false && options.rateLimits !== undefined && !isPlainObject(options.rateLimits)) {
    throw new TypeError('rateLimits must be false (no limits) or an object of limits; leave it out for the defaults');
  }
  checkRateLimits(options.rateLimits);
  if (options.logger !== undefined)
    checkImplements(
      options.logger,
      'logger',
      LOGGER_METHODS,
      'be a pino logger (or one with its child, isLevelEnabled and level methods)',
    );
  checkFunction(options.onError, 'onError', '(error) => void');
  checkFunction(options.now, 'now', '() => milliseconds, like Date.now');
  if (options.now !== undefined && !Number.isFinite(options.now()))
    throw new TypeError('now must return milliseconds since the epoch, like Date.now');
}

/**
 * `profile: 'camara'`: what the profile requires (MUST) cannot be turned off. Every client authenticates with
 * `private_key_jwt`; OpenID Connect needs ID tokens.
 */
function checkCamaraProfile(resolved: ResolvedOptions, registrations: readonly RegisteredClient[]): void {
  const { options, clients } = resolved;
  if (options.idTokens === false) {
    throw new TypeError("idTokens: profile 'camara' requires ID tokens (OpenID Connect); remove idTokens: false");
  }
  for (const client of registrations) checkProfile(client, 'camara');
  if (!(clients instanceof StaticClientRegistry)) {
    const methods = clients.authMethods;
    if (methods === undefined || methods.some((m) => m !== 'private_key_jwt')) {
      throw new TypeError(
        "clients.authMethods: profile 'camara' requires private_key_jwt for every client; " +
          "declare authMethods: ['private_key_jwt'] and register every client with it",
      );
    }
  }
}

/** Whether an issuer's host is this machine (localhost, 127.0.0.0/8, ::1): the only place plain http is safe. */
function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback';
}

/**
 * TLS on every connection is a MUST of the profile: an `http:` issuer off loopback is a start-up error under
 * the preset, and a warning without it (development on localhost stays plain).
 */
function checkIssuerTransport(options: NetAuthOptions, warn: (option: string, message: string) => void): void {
  const url = new URL(options.issuer);
  if (url.protocol !== 'http:' || isLoopbackHost(url.hostname)) return;
  const fix = 'give an https: issuer (http: only on localhost, 127.0.0.0/8 or ::1, for development)';
  if (options.profile === 'camara') {
    throw new TypeError(
      `issuer: profile 'camara' requires TLS on every connection, and the issuer is http: on ${url.host}; ${fix}`,
    );
  }
  warn(
    'issuer',
    `the issuer is http: on ${url.host}, not this machine: tokens and codes would cross the network in clear text; ${fix}`,
  );
}

/**
 * Consent captured with no operator-channel code can be given by a malicious app on the handset (CAMARA: consent
 * "must be done in a manner that does not allow for background loading and acceptance"). Under the preset only an
 * explicit `confirmation: 'off'` gets here.
 */
function warnUnconfirmedConsent(
  options: NetAuthOptions,
  policy: ConsentPolicy,
  warn: (option: string, message: string) => void,
): void {
  const unconfirmed = policy
    .rules()
    .filter((rule) => rule.basis === 'consent' && confirmationOf(rule, options.profile) === 'off')
    .map((rule) => `dpv:${rule.purpose}#${rule.scope}`);
  if (unconfirmed.length === 0) return;
  warn(
    'consentPolicy',
    `consent for ${unconfirmed.join(', ')} is recorded on the page's Allow alone, which an app on the handset can press; ` +
      "set confirmation: 'required' on these rules with a sendConsentConfirmation hook (the operator's SMS or push)" +
      (options.profile === 'camara' ? '' : ", or use profile: 'camara', where it is the default"),
  );
}

/** Production or development, and what said so (for the error: the reader may not know NODE_ENV was set). */
export interface ResolvedMode {
  mode: NetAuthMode;
  from: string;
}

/** `mode`, else Express's convention: `NODE_ENV=production`. The environment is read here only. */
export function resolveMode(option: NetAuthMode | undefined, nodeEnv = process.env.NODE_ENV): ResolvedMode {
  if (option !== undefined) return { mode: option, from: `mode: '${option}'` };
  return nodeEnv === 'production'
    ? { mode: 'production', from: 'NODE_ENV=production' }
    : { mode: 'development', from: 'NODE_ENV is not production' };
}

/**
 * The warnings production mode makes start-up errors, in the order the error names them: each works on one
 * development machine only (tokens, `sub`s or the consent page lost on restart or on another instance; tokens
 * in clear text on the network).
 */
const REQUIRED_IN_PRODUCTION = ['signingKeys', 'pairwiseSalt', 'consentPage.cookieSecret', 'issuer'];

function refuseInProduction(warnings: readonly StartupWarning[], mode: ResolvedMode): void {
  if (mode.mode !== 'production') return;
  const refused = REQUIRED_IN_PRODUCTION.flatMap((option) => warnings.filter((w) => w.option === option));
  if (refused.length === 0) return;
  throw new TypeError(
    `${refused.map((w) => `${w.option}: ${w.message}`).join('\n')}\n` +
      `Production mode (${mode.from}) refuses what works only in development; configure ` +
      `${refused.map((w) => w.option).join(', ')} (README: Production checklist), or give mode: 'development'.`,
  );
}

/** What the consistency checks read: the options, resolved. */
export interface ResolvedOptions {
  options: NetAuthOptions;
  mode: ResolvedMode;
  clients: ClientRegistry;
  policy: ConsentPolicy;
  lifetimes: Required<Lifetimes>;
  /** True when a development signing key was generated. */
  generatedKey: boolean;
}

/**
 * Checks across options, once each is resolved: errors for what cannot work (a client registered for a scope
 * no policy rule knows, polls slower than the request lives), warnings for what works only in development.
 */
export function checkConsistency(resolved: ResolvedOptions): StartupWarning[] {
  const { options, clients, policy, lifetimes } = resolved;
  if (lifetimes.pollInterval >= lifetimes.authReqId) {
    throw new TypeError(
      `lifetimes.pollInterval (${lifetimes.pollInterval} s) must be shorter than lifetimes.authReqId (${lifetimes.authReqId} s): ` +
        'no poll could come before the request expires',
    );
  }
  if (!Array.isArray(policy.rules()))
    throw new TypeError('consentPolicy.rules() must return the list of rules (discovery publishes their scopes)');
  checkTokenRules(policy.rules(), lifetimes.accessToken);
  const registrations = clients instanceof StaticClientRegistry ? clients.list() : [];
  if (options.profile === 'camara') checkCamaraProfile(resolved, registrations);
  for (const client of registrations) {
    for (const scope of client.scopes) {
      const { purpose, scope: api } = registeredScope(scope)!;
      if (policy.rule(purpose, api) === undefined) {
        throw new TypeError(
          `client ${client.clientId}: scope ${scope} has no consentPolicy rule, so every request for it would be invalid_scope; ` +
            `add { purpose: '${purpose}', scope: '${api}', basis } to consentPolicy, or remove the scope`,
        );
      }
    }
  }

  const warnings: StartupWarning[] = [];
  const warn = (option: string, message: string) => warnings.push({ option, message });
  checkIssuerTransport(options, warn);
  warnUnconfirmedConsent(options, policy, warn);
  // Under the preset these rules apply whatever the rule says (context.ts); without it, say where they are missing.
  if (options.profile !== 'camara')
    for (const finding of numberVerificationFindings(policy.rules())) warn('consentPolicy', finding);
  if (options.pairwiseSalt === undefined) {
    warn(
      'pairwiseSalt',
      'no pairwiseSalt configured; a random one is used, so the pairwise `sub` of ID tokens and introspection changes when ' +
        'this process restarts and differs between instances. Configure `pairwiseSalt` (a secret, the same on every instance).',
    );
  }
  if (resolved.generatedKey) {
    warn(
      'signingKeys',
      'no signingKeys configured; a temporary RS256 key was generated for DEVELOPMENT. Tokens signed with it stop verifying ' +
        'when this process restarts, and other instances cannot verify them. Configure `signingKeys` (private JWKs).',
    );
  }
  if (options.sandbox !== undefined && options.network !== undefined) {
    warn(
      'sandbox',
      'sandbox mode is on: the network option is ignored and only sandbox.allowList lines can be used. Remove `sandbox` in production.',
    );
  }
  if (options.sandbox === undefined) {
    if (options.network !== undefined && options.network.mobileRanges.length === 0) {
      warn(
        'network.mobileRanges',
        "network.mobileRanges is empty: the frontend flow identifies no device. List the operator's mobile ranges.",
      );
    }
    const frontend = registrations.find((c) => c.grantTypes.includes('authorization_code'));
    if (options.network === undefined && frontend !== undefined) {
      warn(
        'network',
        `client ${frontend.clientId} uses authorization_code, but without the network option (or sandbox) the frontend flow ` +
          'identifies no one and every request ends in access_denied. Configure network.mobileRanges.',
      );
    }
  }
  if (
    options.consentPage?.cookieSecret === undefined &&
    options.store !== undefined &&
    !(options.store instanceof MemoryStore)
  ) {
    warn(
      'consentPage.cookieSecret',
      'no consentPage.cookieSecret configured with a shared store: each instance signs the consent page cookie with its own ' +
        'random secret, so a subscriber whose requests reach another instance loses the page. Configure the same secret on every instance.',
    );
  }
  if (
    options.backchannel?.authorize !== undefined &&
    options.store !== undefined &&
    !(options.store instanceof MemoryStore)
  ) {
    // The request is in the shared store, its decision only in this process's promise (issue 47: a restart of both
    // gateways left 47 flows pending for good).
    warn(
      'backchannel.authorize',
      'backchannel.authorize decides in this process: a request whose decision is pending when the process restarts stays ' +
        'authorization_pending until it expires, although the shared store keeps it. Decide from your own service with ' +
        'netauth.backchannel.approve() / deny() (restart-safe), or have authorize only start a decision that service reports.',
    );
  }
  refuseInProduction(warnings, resolved.mode);
  return warnings;
}
