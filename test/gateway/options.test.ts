import { Writable } from 'node:stream';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import request from 'supertest';
import express from 'express';
import {
  MemoryStore,
  createNetAuth,
  hashClientSecret,
  type GuardOptions,
  type NetAuth,
  type NetAuthOptions,
  type RegisteredClient,
  type Store,
} from '../../lib/index.js';
import { APP1 as APP1_BASIC, CLIENTS, ISSUER, MOBILE_RANGES, POLICY, SUBSCRIBERS } from '../helpers/gateway.js';
import { KEY_A } from '../helpers/keys.js';

/**
 * Issue 20, start-up validation: every option that can be checked is checked when `createNetAuth` runs, with a
 * TypeError naming the option and the fix; what works only in development is a warning then, through the logger
 * (else stderr, once). Each row is a configuration that used to start silently and fail later (or never).
 */

const SALT = 'options-test-salt';
/** The fixture's policy with its consent confirmed through the operator's channel, as production has it. */
const CONFIRMED_POLICY = POLICY.map((rule) =>
  rule.basis === 'consent' ? { ...rule, confirmation: 'required' as const } : rule,
);
/** A production-shaped configuration: it starts with no warning at all. */
const BASE: NetAuthOptions = {
  issuer: 'https://gateway.test/apigateway',
  clients: CLIENTS,
  subscribers: SUBSCRIBERS,
  consentPolicy: CONFIRMED_POLICY,
  sendConsentConfirmation: async () => {},
  network: { mobileRanges: MOBILE_RANGES },
  pairwiseSalt: SALT,
};
const APP1 = CLIENTS[0]!;

/** Options as a JavaScript user may write them: any shape. */
type Loose = Record<string, unknown>;
const withOptions = (extra: Loose): NetAuthOptions => ({ ...BASE, ...extra }) as NetAuthOptions;
const withClient = (client: Loose): NetAuthOptions =>
  withOptions({ clients: [{ ...APP1, ...client } as RegisteredClient] });
const withSubscribers = (...subscribers: Loose[]): NetAuthOptions => withOptions({ subscribers });
const withRules = (...rules: Loose[]): NetAuthOptions => withOptions({ consentPolicy: rules, clients: [] });

const PLAIN_SECRET = 'a-plain-secret-in-the-hash-field';

const refused: Array<[string, NetAuthOptions, RegExp]> = [
  // Names: a typo is an error naming the closest known option.
  [
    'a misspelt top-level option (JavaScript)',
    { ...BASE, issuerr: ISSUER } as NetAuthOptions,
    /^issuerr: unknown option \(did you mean "issuer"\?\); correct or remove it/,
  ],
  [
    'pairwiseSlat',
    withOptions({ pairwiseSlat: 'x' }),
    /pairwiseSlat: unknown option \(did you mean "pairwiseSalt"\?\)/,
  ],
  [
    'lifetimes.acessToken',
    withOptions({ lifetimes: { acessToken: 60 } }),
    /lifetimes\.acessToken: unknown option \(did you mean "accessToken"\?\)/,
  ],
  [
    'network.mobileRange',
    withOptions({ network: { mobileRange: MOBILE_RANGES } }),
    /network\.mobileRange: unknown option \(did you mean "mobileRanges"\?\)/,
  ],
  [
    'consentPage.texts.titel',
    withOptions({ consentPage: { texts: { titel: 'Hi' } } }),
    /consentPage\.texts\.titel: unknown option \(did you mean "title"\?\)/,
  ],
  [
    'rateLimits.tokens',
    withOptions({ rateLimits: { tokens: {} } }),
    /rateLimits\.tokens: unknown option \(did you mean "token"\?\)/,
  ],
  [
    'a rate rule with "point"',
    withOptions({ rateLimits: { token: { perClient: { point: 5, duration: 60 } } } }),
    /rateLimits\.token\.perClient\.point: unknown option \(did you mean "points"\?\)/,
  ],
  [
    'the former clientAuthentication.perClient',
    withOptions({ rateLimits: { clientAuthentication: { perClient: { failures: 5, duration: 60 } } } }),
    /rateLimits\.clientAuthentication\.perClient is gone: .*use perClientAndAddress/,
  ],
  [
    'a client field typo',
    withClient({ requirePKCE: true }),
    /client app-1: requirePKCE: unknown field \(did you mean "requirePkce"\?\)/,
  ],
  [
    'a subscriber field typo',
    withSubscribers({ id: 's', phone: '+34600000009' }),
    /subscriber s: phone: unknown field \(did you mean "phoneNumber"\?\)/,
  ],
  [
    'a consent rule field typo',
    withRules({ purpose: 'Marketing', scope: 'sim-swap', bassis: 'consent' }),
    /consentPolicy\[0\]\.bassis: unknown field \(did you mean "basis"\?\)/,
  ],
  [
    'clientJwks.timeout, too far from any name for a guess',
    withOptions({ clientJwks: { timeout: 5 } }),
    /clientJwks\.timeout: unknown option; correct or remove it \(known: fetchTimeout, maxBytes, cacheMaxAge, internalOrigins\)/,
  ],

  // The issue's defects.
  [
    'a malformed clientSecretHash (issue 20)',
    withClient({ clientSecret: undefined, clientSecretHash: 'sha256:abc' }),
    /client app-1: clientSecretHash is not a hash from hashClientSecret\(\) .*register await hashClientSecret\(secret\)/,
  ],
  [
    'a plain secret as clientSecretHash',
    withClient({ clientSecret: undefined, clientSecretHash: PLAIN_SECRET }),
    /clientSecretHash is not a hash from hashClientSecret/,
  ],
  [
    'an scrypt hash without its salt',
    withClient({ clientSecret: undefined, clientSecretHash: 'scrypt:abcdefghijklmnopqrstuvwxyz0123456789abcdefg' }),
    /clientSecretHash is not a hash/,
  ],
  [
    'authorization_code without redirect URIs (issue 20)',
    withClient({ redirectUris: undefined }),
    /client app-1: grant type authorization_code needs redirectUris \(the exact callback URIs\); add them, or remove the grant type/,
  ],
  [
    'authorization_code with an empty redirectUris',
    withClient({ redirectUris: [] }),
    /grant type authorization_code needs redirectUris/,
  ],
  [
    'a scope no policy rule covers (issue 20)',
    withClient({ scopes: ['dpv:Marketing#sim-swap'] }),
    /client app-1: scope dpv:Marketing#sim-swap has no consentPolicy rule, so every request for it would be invalid_scope; add \{ purpose: 'Marketing', scope: 'sim-swap', basis \}/,
  ],

  // Clients.
  [
    'a scope without its purpose',
    withClient({ scopes: ['sim-swap'] }),
    /client app-1: scopes: "sim-swap" is not of the form dpv:<Purpose>#<scope>/,
  ],
  [
    'a scope in the CAMARA request form',
    withClient({ scopes: ['dpv:FraudPreventionAndDetection sim-swap'] }),
    /is not of the form dpv:<Purpose>#<scope>/,
  ],
  [
    'openid among the scopes (a protocol scope, no dpv: value)',
    withClient({ scopes: ['openid', 'dpv:FraudPreventionAndDetection#sim-swap'] }),
    /client app-1: scopes: openid is a protocol scope every client may request .*: leave it out of scopes$/,
  ],
  [
    'offline_access among the scopes',
    withClient({ scopes: ['offline_access'] }),
    /client app-1: scopes: offline_access is a protocol scope .*out of scopes and add 'refresh_token' to grantTypes$/,
  ],
  ['no scopes', withClient({ scopes: [] }), /client app-1: scopes is empty, so the client can do nothing/],
  [
    'an unknown grant type',
    withClient({ grantTypes: ['password'] }),
    /client app-1: grantTypes: "password" is not a grant type of this gateway/,
  ],
  ['no grant types', withClient({ grantTypes: [] }), /client app-1: grantTypes is empty/],
  [
    'grantTypes as a string',
    withClient({ grantTypes: 'authorization_code' }),
    /client app-1: grantTypes must be a list, not a string/,
  ],
  [
    'a redirect URI that is not a string',
    withClient({ redirectUris: [new URL('https://app.example/cb')] }),
    /client app-1: redirectUris must hold strings/,
  ],
  [
    'requirePkce as a string',
    withClient({ requirePkce: 'yes' }),
    /client app-1: requirePkce must be true or false, not a string/,
  ],
  [
    'dpopBoundAccessTokens as a string',
    withClient({ dpopBoundAccessTokens: 'yes' }),
    /client app-1: dpopBoundAccessTokens must be true or false, not a string/,
  ],
  ['an empty clientSecret', withClient({ clientSecret: '' }), /client app-1: clientSecret must be a non-empty string/],
  [
    'a client without an id',
    withClient({ clientId: undefined }),
    /clients: a registration has clientId nothing; give each client its non-empty string id/,
  ],
  [
    'clients as neither list nor registry',
    withOptions({ clients: { 'app-1': APP1 } }),
    /clients must be a list of registrations or a ClientRegistry with find\(clientId\) \(missing: find\)/,
  ],
  [
    'a registry declaring an unknown method',
    withOptions({ clients: { find: async () => undefined, authMethods: ['tls_client_auth'] } }),
    /clients\.authMethods must list the methods your clients use/,
  ],

  // Consent policy.
  ['no rules', withRules(), /consentPolicy has no rules, so every request would be invalid_scope/],
  [
    'an unknown basis',
    withRules({ purpose: 'Marketing', scope: 'sim-swap', basis: 'maybe' }),
    /consentPolicy\[0\]\.basis must be one of 'consent', 'legitimate-interest', 'forbidden'/,
  ],
  [
    'a purpose with its dpv: prefix',
    withRules({ purpose: 'dpv:Marketing', scope: 'sim-swap', basis: 'consent' }),
    /consentPolicy\[0\]\.purpose must be a DPV purpose name without the dpv: prefix/,
  ],
  [
    'a scope with its purpose',
    withRules({ purpose: 'Marketing', scope: 'Marketing#sim-swap', basis: 'consent' }),
    /consentPolicy\[0\]\.scope must be an API scope \(e\.g\. sim-swap\), without the purpose/,
  ],
  [
    'two rules for one pair',
    withRules(
      { purpose: 'Marketing', scope: 'sim-swap', basis: 'consent' },
      { purpose: 'Marketing', scope: 'sim-swap', basis: 'forbidden' },
    ),
    /consentPolicy\[1\]: a second rule for dpv:Marketing#sim-swap/,
  ],
  [
    'a consent lifetime of 0',
    withRules({ purpose: 'Marketing', scope: 'sim-swap', basis: 'consent', consentLifetime: 0 }),
    /consentPolicy\[0\]\.consentLifetime must be a positive whole number of seconds/,
  ],
  [
    'a policy whose rules() is not a list',
    withOptions({ consentPolicy: { rule: () => undefined, rules: () => undefined } }),
    /consentPolicy\.rules\(\) must return the list of rules/,
  ],
  [
    'a policy without rules()',
    withOptions({ consentPolicy: { rule: () => undefined } }),
    /consentPolicy must be a list of rules or a ConsentPolicy with rule\(purpose, scope\) and rules\(\) \(missing: rules\)/,
  ],

  // Subscribers.
  [
    'a phone number without "+"',
    withSubscribers({ id: 's', phoneNumber: '34600000009' }),
    /subscriber s: phoneNumber must be E\.164 with a leading "\+"/,
  ],
  ['one id twice', withSubscribers({ id: 's' }, { id: 's' }), /subscribers\[1\]: the id s is used twice/],
  [
    'one line for two subscribers',
    withSubscribers({ id: 's', phoneNumber: '+34600000009' }, { id: 't', phoneNumber: '+34600000009' }),
    /subscriber t: its phoneNumber is already another subscriber's/,
  ],
  [
    'a directory without findByNetworkAddress',
    withOptions({ subscribers: { findByPhoneNumber: async () => undefined } }),
    /subscribers must be a list of subscribers or a SubscriberDirectory \(missing: findByNetworkAddress\)/,
  ],

  // Hooks, interfaces, types.
  [
    'backchannel.authorize not a function',
    withOptions({ backchannel: { authorize: 'approve' } }),
    /backchannel\.authorize must be a function: \(request\) => Promise<'approve' \| 'deny'>/,
  ],
  [
    'backchannel.onConsentRequired not a function',
    withOptions({ backchannel: { onConsentRequired: { url: 'https://sms.example' } } }),
    /backchannel\.onConsentRequired must be a function/,
  ],
  [
    'a store without the contract',
    withOptions({ store: new Map() }),
    /store must implement the Store contract \(put, get, add, consume, delete, revokeGrant\).*\(missing: put, add, consume, revokeGrant\)/,
  ],
  [
    'console as the logger',
    withOptions({ logger: console }),
    /logger must be a pino logger .*\(missing: child, isLevelEnabled\)/,
  ],
  ['onError not a function', withOptions({ onError: 'log' }), /onError must be a function/],
  [
    'now as a number',
    withOptions({ now: 1_800_000_000_000 }),
    /now must be a function: \(\) => milliseconds, like Date\.now/,
  ],
  ['now returning a Date', withOptions({ now: () => new Date() }), /now must return milliseconds since the epoch/],
  ['idTokens as a string', withOptions({ idTokens: 'true' }), /idTokens must be true or false, not a string/],
  ['one JWK as signingKeys', withOptions({ signingKeys: KEY_A }), /signingKeys must be a list of private JWKs/],
  [
    'an empty accessTokenAudience',
    withOptions({ accessTokenAudience: '' }),
    /accessTokenAudience must be a non-empty string/,
  ],
  [
    'pairwiseSalt as a Buffer',
    withOptions({ pairwiseSalt: Buffer.from('salt') }),
    /pairwiseSalt must be a non-empty string \(a secret, the same on every instance\), not an object/,
  ],
  [
    'a realm with a line break',
    withOptions({ realm: 'api\r\nSet-Cookie: x=1' }),
    /realm must be a non-empty string of printable ASCII: it is sent in WWW-Authenticate/,
  ],
  [
    'an unparsable bodyLimit (body-parser would read no limit)',
    withOptions({ bodyLimit: 'lots' }),
    /bodyLimit must be a positive number of bytes or a size such as '16kb', not "lots"/,
  ],
  ['a negative bodyLimit', withOptions({ bodyLimit: -1 }), /bodyLimit must be a positive number of bytes/],
  [
    'rateLimits: true',
    withOptions({ rateLimits: true }),
    /rateLimits must be false \(no limits\) or an object of limits/,
  ],
  [
    'issuer not a string',
    withOptions({ issuer: new URL(ISSUER) }),
    /issuer must be the absolute URL where the router is mounted/,
  ],
  [
    'an issuer with a trailing slash (never rewritten: clients compare it exactly)',
    withOptions({ issuer: `${ISSUER}/` }),
    /issuer must not end with '\/': clients compare it exactly .*; give "http:\/\/gateway\.test\/apigateway"$/,
  ],
  [
    'a root issuer with its slash',
    withOptions({ issuer: 'https://gw.example/' }),
    /issuer must not end with '\/'.*give "https:\/\/gw\.example"$/,
  ],
  [
    'an ftp: issuer',
    withOptions({ issuer: 'ftp://gw.example/apigateway' }),
    /issuer must be an https: URL \(http: for development\), not ftp:/,
  ],
  ['options as a string', ISSUER as unknown as NetAuthOptions, /createNetAuth needs an object of options/],

  // Lifetimes and sandbox.
  [
    'polls slower than the request lives',
    withOptions({ lifetimes: { authReqId: 10, pollInterval: 10 } }),
    /lifetimes\.pollInterval \(10 s\) must be shorter than lifetimes\.authReqId \(10 s\)/,
  ],
  [
    'a fractional lifetime',
    withOptions({ lifetimes: { code: 0.5 } }),
    /lifetimes\.code must be a positive whole number of seconds/,
  ],
  [
    'an empty sandbox allow-list',
    withOptions({ sandbox: { allowList: [] } }),
    /sandbox\.allowList is empty, so no line could be used/,
  ],
  [
    'a sandbox line without "+"',
    withOptions({ sandbox: { allowList: ['+34600000001', 'tel:34600000002'] } }),
    /sandbox\.allowList\[1\] must be \+<E\.164> or tel:\+<E\.164>/,
  ],
  [
    'consentPage texts that are not strings',
    withOptions({ consentPage: { texts: { title: 42 } } }),
    /consentPage\.texts\.title must be a string, not a number/,
  ],
];

describe('createNetAuth refuses a configuration that cannot work, naming the option and the fix', () => {
  it.each(refused)('%s', (_name, options, message) => {
    let thrown: unknown;
    try {
      createNetAuth(options);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as Error).message).toMatch(message);
    // A value in the wrong field may be a secret or a phone number: messages name the field, never echo such values.
    expect((thrown as Error).message).not.toContain(PLAIN_SECRET);
    expect((thrown as Error).message).not.toContain('34600000009');
  });

  it('accepts the real hashes, a CIBA-only client without redirect URIs, and a custom registry or policy', async () => {
    const started: NetAuth[] = [];
    const start = (options: NetAuthOptions) => started.push(createNetAuth(options));
    start(withClient({ clientSecret: undefined, clientSecretHash: await hashClientSecret('s3cret') }));
    start(withClient({ clientSecret: undefined, clientSecretHash: await hashClientSecret('s3cret', 'scrypt') }));
    start(withOptions({ clients: [{ ...CLIENTS[1]!, redirectUris: undefined }] }));
    start(
      withOptions({
        clients: { find: async () => undefined },
        consentPolicy: { rule: () => undefined, rules: () => [] },
      }),
    );
    start(withOptions({ bodyLimit: '1.5mb' }));
    start(
      withOptions({
        bodyLimit: 2048,
        rateLimits: false,
        sandbox: { allowList: ['tel:+34600000001'] },
        network: undefined,
      }),
    );
    await Promise.all(started.map((n) => n.close()));
  });
});

describe('netauth.guard() checks its options when the middleware is made', () => {
  const cases: Array<[string, Loose, RegExp]> = [
    [
      'a scope no rule knows',
      { scope: 'sim-swapp' },
      /guard scope 'sim-swapp' is in no consentPolicy rule, so no token could carry it/,
    ],
    [
      'a scope with its purpose',
      { scope: 'dpv:FraudPreventionAndDetection#sim-swap' },
      /guard scope must be an API scope \('sim-swap'; the purpose goes in purpose\)/,
    ],
    [
      'a purpose no rule knows',
      { scope: 'sim-swap', purpose: 'Fraud' },
      /guard purpose 'Fraud' is in no consentPolicy rule/,
    ],
    ['a misspelt option', { scopes: ['sim-swap'] }, /guard\.scopes: unknown option \(did you mean "scope"\?\)/],
    ['a realm with a line break', { realm: 'a\nb' }, /guard realm must be a non-empty string of printable ASCII/],
    ['an errorFormat it does not know', { errorFormat: 'json' }, /guard errorFormat must be 'oauth' or 'camara'/],
    ['device identification in the OAuth format', { device: true }, /set errorFormat: 'camara' beside device/],
    [
      'a publicOrigin with a path',
      { publicOrigin: 'https://api.example/v1' },
      /guard publicOrigin must be an http\(s\) origin without path/,
    ],
  ];
  const netauth = createNetAuth(BASE);
  afterAll(() => netauth.close());

  it.each(cases)('%s', (_name, options, message) => {
    expect(() => netauth.guard(options as GuardOptions)).toThrow(message);
  });

  it('accepts scopes and purposes the policy knows', () => {
    expect(() =>
      netauth.guard({ scope: ['sim-swap', 'device-location'], purpose: 'FraudPreventionAndDetection' }),
    ).not.toThrow();
  });
});

/** A pino logger writing into memory: the warnings it received. */
function memoryLogger(): { logger: pino.Logger; warnings(): Array<{ option: string; msg: string }> } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  return {
    logger: pino({ level: 'info' }, stream),
    warnings: () =>
      lines
        .map((l) => JSON.parse(l) as { level: number; option: string; msg: string })
        .filter((l) => l.level === 40)
        .map(({ option, msg }) => ({ option, msg })),
  };
}

/** A store of the application's own, shared by instances (here over a MemoryStore). */
function sharedStore(): Store {
  const memory = new MemoryStore();
  return {
    put: (...a) => memory.put(...a),
    get: (...a) => memory.get(...a),
    add: (...a) => memory.add(...a),
    consume: (...a) => memory.consume(...a),
    delete: (...a) => memory.delete(...a),
    revokeGrant: (...a) => memory.revokeGrant(...a),
    close: () => memory.close(),
  };
}

describe('warnings are given at start-up, through the logger (else stderr, once)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  // First in this describe: stderr warnings are printed once per process, so no other test here uses stderr.
  it('without a logger: one line on stderr at start-up, once however many gateways are made', async () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const first = createNetAuth(withOptions({ pairwiseSalt: undefined }));
    const second = createNetAuth(withOptions({ pairwiseSalt: undefined }));
    expect(written.filter((l) => l.includes('no pairwiseSalt configured'))).toEqual([
      expect.stringMatching(/^express-netauth: WARNING: no pairwiseSalt configured; .*Configure `pairwiseSalt`/),
    ]);
    await Promise.all([first.close(), second.close()]);
  });

  const warned: Array<[string, Loose, string, RegExp]> = [
    [
      'no pairwiseSalt (issue 20: was said at the first introspection)',
      { pairwiseSalt: undefined },
      'pairwiseSalt',
      /no pairwiseSalt configured; a random one is used/,
    ],
    [
      'ID tokens (the default) without signing keys',
      { signingKeys: undefined },
      'signingKeys',
      /no signingKeys configured; a temporary RS256 key was generated for DEVELOPMENT/,
    ],
    [
      'JWT access tokens without signing keys',
      { idTokens: false, accessTokenFormat: 'jwt', signingKeys: undefined },
      'signingKeys',
      /no signingKeys configured/,
    ],
    [
      'sandbox mode with a network',
      { sandbox: { allowList: ['+34600000001'] } },
      'sandbox',
      /sandbox mode is on: the network option is ignored/,
    ],
    [
      'empty mobile ranges',
      { network: { mobileRanges: [] } },
      'network.mobileRanges',
      /network\.mobileRanges is empty: the frontend flow identifies no device/,
    ],
    [
      'a frontend client and no network',
      { network: undefined },
      'network',
      /client app-1 uses authorization_code, but without the network option .* every request ends in access_denied/,
    ],
    [
      'an http: issuer off loopback (issue 41; an error under the preset)',
      { issuer: ISSUER },
      'issuer',
      /the issuer is http: on gateway\.test, not this machine: .*give an https: issuer/,
    ],
    [
      "a consent rule whose consent is not confirmed (issue 41; under the preset, only with confirmation: 'off')",
      { consentPolicy: POLICY },
      'consentPolicy',
      /consent for dpv:FraudPreventionAndDetection#device-location is recorded on the page's Allow alone.*confirmation: 'required'.*or use profile: 'camara'/,
    ],
    [
      'a shared store without a cookie secret',
      { store: sharedStore() },
      'consentPage.cookieSecret',
      /no consentPage\.cookieSecret configured with a shared store/,
    ],
  ];

  it.each(warned)('%s', async (_name, extra, option, message) => {
    const log = memoryLogger();
    const netauth = createNetAuth(withOptions({ signingKeys: [KEY_A], ...extra, logger: log.logger }));
    // Before any request: at start-up.
    expect(log.warnings()).toEqual([{ option, msg: expect.stringMatching(message) }]);
    await netauth.close();
    await (extra.store as Store | undefined)?.close?.();
  });

  it('a production-shaped configuration starts without a warning, and serves requests without one', async () => {
    const log = memoryLogger();
    const store = sharedStore();
    const netauth = createNetAuth({
      ...BASE,
      store,
      idTokens: true,
      accessTokenFormat: 'jwt',
      signingKeys: [KEY_A],
      consentPage: { cookieSecret: 'a-long-random-cookie-secret' },
      logger: log.logger,
    });
    const app = express();
    app.use('/apigateway', netauth.router);
    const res = await request(app)
      .post('/apigateway/introspect')
      .set('Authorization', APP1_BASIC)
      .type('form')
      .send({ token: 'unknown' });
    expect(res.body).toEqual({ active: false });
    expect(log.warnings()).toEqual([]);
    await store.close?.();
  });
});
