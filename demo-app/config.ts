/**
 * The demo's configuration: embedded defaults, optionally overridden by one JSON file, validated as a whole.
 * A problem is reported as one line naming the field (`subscribers[1].phoneNumber: must be +<E.164>`).
 */
import { readFileSync } from 'node:fs';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

const E164 = /^\+[1-9][0-9]{4,14}$/;
const CIBA = 'urn:openid:params:grant-type:ciba';
// The colour grammar the consent page accepts (lib/gateway/http/consent-template.ts), checked here so a bad
// colour is reported against the config field rather than as a start-up exception.
const COLOUR =
  /^(?:#(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})|[a-z]{3,30}|(?:rgba?|hsla?)\([0-9a-z.,%\s/+-]{1,60}\))$/i;
const SCOPE = /^dpv:[A-Za-z][A-Za-z0-9]*#[A-Za-z0-9][A-Za-z0-9:._/-]*$/;

/** Where the sample app publishes its public keys (a private_key_jwt app client): its registered jwksUri's path. */
export const APP_JWKS_PATH = '/jwks.json';

/** Thrown by the loader: `message` is the whole, user-facing line. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function isIp(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

/** Whether the address lies in one of the ranges; invalid input (reported by its own field) counts as inside. */
function inRanges(address: string, ranges: readonly string[]): boolean {
  if (!isIp(address)) return true;
  const ip = ipaddr.process(address);
  return ranges.some((text) => {
    if (!ipaddr.isValidCIDR(text)) return true;
    const range = ipaddr.parseCIDR(text);
    return range[0].kind() === ip.kind() && ip.match(range);
  });
}

const phone = z.string().regex(E164, { error: 'must be +<E.164>, e.g. +34600000001' });
const seconds = z
  .number()
  .int({ error: 'must be a whole number of seconds' })
  .positive({ error: 'must be at least 1' });
const port = z
  .number()
  .int({ error: 'must be a port number' })
  .min(0, { error: 'must be 0..65535 (0: any free port)' })
  .max(65535, { error: 'must be 0..65535 (0: any free port)' });
const scope = z.string().regex(SCOPE, { error: 'must be dpv:<Purpose>#<scope>' });
const colour = z.string().regex(COLOUR, { error: 'must be a CSS colour: #rrggbb, rgb(...), hsl(...) or a name' });

const clientSchema = z.strictObject({
  clientId: z.string().regex(/^[\x21-\x7e]{1,128}$/, { error: 'must be 1-128 printable characters, no spaces' }),
  name: z.string().min(1).max(80).optional(),
  /** `private_key_jwt`: the CAMARA profile (the sample app's client only: the app generates its key at start). */
  tokenEndpointAuthMethod: z
    .enum(['client_secret_basic', 'private_key_jwt'], { error: 'must be "client_secret_basic" or "private_key_jwt"' })
    .optional(),
  clientSecret: z.string().min(8, { error: 'must be at least 8 characters' }).optional(),
  redirectUris: z.array(z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' })).optional(),
  grantTypes: z
    .array(z.enum(['authorization_code', CIBA], { error: `must be "authorization_code" or "${CIBA}"` }))
    .min(1, { error: 'needs at least one grant type' }),
  scopes: z.array(scope).min(1, { error: 'needs at least one scope' }),
});

const subscriberSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, { error: 'must be 1-64 letters, digits, ".", "_" or "-"' }),
  name: z.string().min(1).max(60).optional(),
  phoneNumber: phone,
  addresses: z.array(z.string().refine(isIp, { error: 'must be an IPv4 or IPv6 address' })).optional(),
  simSwapped: z.boolean().optional(),
});

const ruleSchema = z.strictObject({
  purpose: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9]*$/, { error: 'must be a DPV purpose, e.g. FraudPreventionAndDetection' }),
  scope: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9:._/-]*$/, { error: 'must be an API scope, e.g. sim-swap' }),
  basis: z.enum(['consent', 'legitimate-interest', 'forbidden'], {
    error: 'must be "consent", "legitimate-interest" or "forbidden"',
  }),
  description: z.string().min(1).max(200).optional(),
  consentLifetime: seconds.optional(),
  confirmation: z.enum(['off', 'required'], { error: 'must be "off" or "required"' }).optional(),
});

/** The languages beyond `operator.language` the demo can serve (`operator.languages`). */
export const DEMO_LANGUAGES = ['es'] as const;

const schema = z
  .strictObject({
    host: z.string().regex(/^(?:localhost|127(?:\.(?:25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})){3})$/, {
      error: 'must be "localhost" or a 127.x.y.z address (the demo serves loopback only)',
    }),
    ports: z.strictObject({ gateway: port, app: port }),
    issuerPath: z
      .string()
      .regex(/^\/[A-Za-z0-9._~-]+(?:\/[A-Za-z0-9._~-]+)*$/, { error: 'must be a path such as /apigateway' }),
    profile: z.enum(['camara', 'none'], { error: 'must be "camara" (the CAMARA profile, the default) or "none"' }),
    operator: z.strictObject({
      name: z.string().min(1).max(60),
      primaryColor: colour.optional(),
      primaryTextColor: colour.optional(),
      backgroundColor: colour.optional(),
      textColor: colour.optional(),
      logoUrl: z
        .string()
        .regex(/^(?:\/(?!\/)[^\s"'<>;,\\`]*|https:\/\/[^\s"'<>;,\\`]+|data:image\/[a-z0-9.+-]+[;,][^\s"'<>\\`]*)$/i, {
          error: 'must be a path on the gateway, an https URL or a data:image URI',
        })
        .optional(),
      privacyPolicyUrl: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }).optional(),
      language: z
        .string()
        .regex(/^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$/, { error: 'must be a BCP 47 tag such as en or es-ES' })
        .optional(),
      languages: z.array(z.enum(DEMO_LANGUAGES, { error: `must be one of ${DEMO_LANGUAGES.join(', ')}` })).optional(),
    }),
    clients: z.array(clientSchema).min(1, { error: 'needs at least one client' }),
    subscribers: z.array(subscriberSchema).min(1, { error: 'needs at least one subscriber' }),
    network: z.strictObject({
      mobileRanges: z.array(
        z.string().refine((t) => ipaddr.isValidCIDR(t), { error: 'must be a CIDR range such as 127.0.0.0/8' }),
      ),
      wifiAddress: z.string().refine(isIp, { error: 'must be an IPv4 or IPv6 address' }),
    }),
    consentPolicy: z.array(ruleSchema).min(1, { error: 'needs at least one rule' }),
    sandbox: z
      .strictObject({
        allowList: z.array(
          z.string().regex(/^(?:tel:)?\+[1-9][0-9]{4,14}$/, { error: 'must be +<E.164> or tel:+<E.164>' }),
        ),
      })
      .nullable()
      .optional(),
    lifetimes: z.strictObject({
      code: seconds.optional(),
      authReqId: seconds.optional(),
      pollInterval: seconds.optional(),
      accessToken: seconds.optional(),
      expiredRetention: seconds.optional(),
      interaction: seconds.optional(),
    }),
    app: z.strictObject({
      clientId: z.string(),
      scopes: z.strictObject({ numberVerification: scope, simSwap: scope }),
    }),
  })
  .superRefine((c, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const seen = new Map<string, number>();
    // With no client named by app.clientId, that is the problem reported, not what follows from it.
    const appExists = c.clients.some((client) => client.clientId === c.app.clientId);
    c.clients.forEach((client, i) => {
      if (seen.has(client.clientId))
        issue(
          ['clients', i, 'clientId'],
          `"${client.clientId}" is already used by clients[${seen.get(client.clientId)}]`,
        );
      seen.set(client.clientId, i);
      const isApp = client.clientId === c.app.clientId;
      if (client.tokenEndpointAuthMethod === 'private_key_jwt') {
        if (!isApp && appExists)
          issue(
            ['clients', i, 'tokenEndpointAuthMethod'],
            "private_key_jwt is for the sample app's client (app.clientId): the app generates its key at start",
          );
        if (client.clientSecret !== undefined)
          issue(
            ['clients', i, 'clientSecret'],
            'a private_key_jwt client has no secret (it authenticates with its key): remove it',
          );
      } else if (client.clientSecret === undefined) {
        issue(
          ['clients', i, 'clientSecret'],
          'is required (or "tokenEndpointAuthMethod": "private_key_jwt" for the sample app\'s client)',
        );
      } else if (c.profile === 'camara') {
        // The gateway would refuse it at start (profile 'camara' requires private_key_jwt): said here, by its path.
        issue(
          ['clients', i, 'tokenEndpointAuthMethod'],
          'profile "camara" (the default) requires private_key_jwt, which only the sample app\'s client has here ' +
            '(its key is made at start): remove the secret client, or set "profile": "none"',
        );
      }
      // The app's callback is registered for it; any other frontend client needs its own.
      if (!isApp && appExists && client.grantTypes.includes('authorization_code') && !client.redirectUris?.length) {
        issue(['clients', i, 'redirectUris'], 'needs at least one URI for the grant type authorization_code');
      }
    });
    const authReqId = c.lifetimes.authReqId ?? 120;
    if ((c.lifetimes.pollInterval ?? 2) >= authReqId)
      issue(['lifetimes', 'pollInterval'], `must be shorter than lifetimes.authReqId (${authReqId})`);
    const ids = new Map<string, string>();
    const phones = new Map<string, number>();
    const addresses = new Map<string, number>();
    c.subscribers.forEach((s, i) => {
      if (ids.has(s.id)) issue(['subscribers', i, 'id'], `"${s.id}" is already used by ${ids.get(s.id)}`);
      ids.set(s.id, `subscribers[${i}]`);
      if (phones.has(s.phoneNumber))
        issue(
          ['subscribers', i, 'phoneNumber'],
          `${s.phoneNumber} is already the line of subscribers[${phones.get(s.phoneNumber)}]`,
        );
      phones.set(s.phoneNumber, i);
      (s.addresses ?? []).forEach((a, j) => {
        if (!isIp(a)) return;
        const key = ipaddr.process(a).toNormalizedString();
        if (addresses.has(key))
          issue(['subscribers', i, 'addresses', j], `${a} is already an address of subscribers[${addresses.get(key)}]`);
        addresses.set(key, i);
        if (!inRanges(a, c.network.mobileRanges))
          issue(['subscribers', i, 'addresses', j], `${a} is outside network.mobileRanges`);
      });
    });
    if (inRanges(c.network.wifiAddress, c.network.mobileRanges))
      issue(['network', 'wifiAddress'], 'must lie outside network.mobileRanges (it plays a WiFi network)');
    if (c.ports.gateway !== 0 && c.ports.gateway === c.ports.app)
      issue(['ports', 'app'], 'must differ from ports.gateway');
    const rules = new Set(c.consentPolicy.map((r) => `${r.purpose}#${r.scope}`));
    c.clients.forEach((client, i) => {
      client.scopes.forEach((s, j) => {
        if (!rules.has(s.slice(4))) issue(['clients', i, 'scopes', j], `${s} has no rule in consentPolicy`);
      });
    });
    const appClient = c.clients.find((client) => client.clientId === c.app.clientId);
    if (!appClient) {
      issue(['app', 'clientId'], `no client "${c.app.clientId}" in clients`);
      return;
    }
    for (const grant of ['authorization_code', CIBA] as const) {
      if (!appClient.grantTypes.includes(grant))
        issue(
          ['app', 'clientId'],
          `client "${appClient.clientId}" needs the grant type ${grant} (the app runs both flows)`,
        );
    }
    for (const key of ['numberVerification', 'simSwap'] as const) {
      if (!appClient.scopes.includes(c.app.scopes[key]))
        issue(['app', 'scopes', key], `client "${appClient.clientId}" is not registered for ${c.app.scopes[key]}`);
    }
    if (c.app.scopes.numberVerification.split('#')[1] !== 'number-verification')
      issue(
        ['app', 'scopes', 'numberVerification'],
        'the scope must be #number-verification (the API the gateway serves)',
      );
    if (c.app.scopes.simSwap.split('#')[1] !== 'sim-swap')
      issue(['app', 'scopes', 'simSwap'], 'the scope must be #sim-swap (the API the gateway serves)');
  });

export type DemoConfig = z.infer<typeof schema>;
export type DemoSubscriber = DemoConfig['subscribers'][number];

const NUMBER_VERIFICATION = 'dpv:RequestedServiceProvision#number-verification';
const SIM_SWAP = 'dpv:FraudPreventionAndDetection#sim-swap';

/** The embedded defaults: everything `npm run demo` needs, on loopback, in memory. */
export const DEFAULT_CONFIG: DemoConfig = {
  host: 'localhost',
  ports: { gateway: 3000, app: 3001 },
  issuerPath: '/apigateway',
  // The CAMARA Security and Interoperability Profile's requirements, set at once (createNetAuth's `profile`).
  profile: 'camara',
  // Spanish too, for a browser that asks for it (Accept-Language): the pages and the text message.
  operator: { name: 'Demo Mobile', primaryColor: '#b3123e', logoUrl: '/demo/logo.svg', languages: ['es'] },
  clients: [
    {
      clientId: 'demo-app',
      name: 'Demo Shop',
      // The CAMARA profile: a key generated at start, published at the app's /jwks.json, and signed requests.
      tokenEndpointAuthMethod: 'private_key_jwt',
      grantTypes: ['authorization_code', CIBA],
      scopes: [NUMBER_VERIFICATION, SIM_SWAP],
    },
  ],
  subscribers: [
    { id: 'sub-0001', name: 'Alice', phoneNumber: '+34600000001', addresses: ['127.0.0.1', '::1'], simSwapped: false },
    { id: 'sub-0002', name: 'Bob', phoneNumber: '+34600000002', addresses: ['127.0.0.2'], simSwapped: true },
    { id: 'sub-0003', name: 'Carmen', phoneNumber: '+34600000003', addresses: ['127.0.0.3'], simSwapped: false },
  ],
  network: { mobileRanges: ['127.0.0.0/8', '::1/128'], wifiAddress: '192.0.2.10' },
  consentPolicy: [
    {
      purpose: 'RequestedServiceProvision',
      scope: 'number-verification',
      basis: 'consent',
      description: 'confirm that the phone number you typed is the number of this phone',
      // The consent page asks for the code the operator texts to the phone (the phone page shows it).
      confirmation: 'required',
    },
    {
      purpose: 'FraudPreventionAndDetection',
      scope: 'sim-swap',
      basis: 'consent',
      description: 'check whether the SIM card of your line was swapped recently',
      confirmation: 'required',
    },
  ],
  lifetimes: {},
  app: { clientId: 'demo-app', scopes: { numberVerification: NUMBER_VERIFICATION, simSwap: SIM_SWAP } },
};

// Sections merged field by field with the defaults; every other key (lists, host, …) replaces the default.
const SECTIONS = ['ports', 'operator', 'network', 'lifetimes', 'app'] as const;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `["subscribers", 1, "phoneNumber"]` → `subscribers[1].phoneNumber`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `${out === '' ? '' : '.'}${String(key)}`;
  return out === '' ? '(top level)' : out;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    return `${formatPath([...issue.path, key])}: unknown key`;
  }
  if (issue.code === 'invalid_type' && issue.expected !== 'int') {
    const received =
      issue.input === undefined
        ? 'nothing'
        : Array.isArray(issue.input)
          ? 'a list'
          : issue.input === null
            ? 'null'
            : typeof issue.input;
    const expected =
      issue.expected === 'array' ? 'a list' : issue.expected === 'object' ? 'an object' : `a ${issue.expected}`;
    return `${formatPath(issue.path)}: ${issue.input === undefined ? 'is required' : `must be ${expected}, not ${received}`}`;
  }
  if (issue.code !== 'custom' && issue.input === undefined) return `${formatPath(issue.path)}: is required`;
  if (issue.code === 'too_small' && issue.origin === 'string')
    return `${formatPath(issue.path)}: ${issue.message.startsWith('Too small') ? 'must not be empty' : issue.message}`;
  return `${formatPath(issue.path)}: ${issue.message}`;
}

/**
 * Merges a parsed config file (or an object from a test) over the defaults and validates the result.
 * Throws ConfigError with one line: `demo config <source>: <field>: <problem>`.
 */
export function resolveConfig(overrides: unknown, source = 'defaults'): DemoConfig {
  const fail = (message: string): never => {
    throw new ConfigError(`demo config ${source}: ${message}`);
  };
  if (!isPlainObject(overrides)) fail('must be a JSON object');
  const merged: Record<string, unknown> = { ...DEFAULT_CONFIG, ...(overrides as Record<string, unknown>) };
  for (const section of SECTIONS) {
    const value = (overrides as Record<string, unknown>)[section];
    if (isPlainObject(value)) merged[section] = { ...DEFAULT_CONFIG[section], ...value };
  }
  const result = schema.safeParse(merged, { reportInput: true });
  if (!result.success) fail(describeIssue(result.error.issues[0]!));
  return (result as { data: DemoConfig }).data;
}

/** Reads and validates a config file. */
export function loadConfig(file: string): DemoConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `demo config ${file}: cannot read the file (${code === 'ENOENT' ? 'no such file' : (code ?? 'error')})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`demo config ${file}: not valid JSON (${(error as Error).message})`);
  }
  return resolveConfig(parsed, file);
}
