import { scrypt as scryptCallback, randomBytes, timingSafeEqual } from 'node:crypto';
import type { JWK } from 'jose';
import { sha256Bytes } from '../crypto.js';
import { promisify } from 'node:util';
import { checkClientKeys, LOOPBACK_HOSTS, type ClientSigningAlgorithm } from './client-jwks.js';
import { checkBoolean, checkNames, checkString, describe, isPlainObject, optionNames } from '../option-checks.js';
import { API_SCOPE, PURPOSE } from '../identity/scope.js';
import { scryptLimiter } from './scrypt.js';
import { secretHistory } from './secret-history.js';
import { JwksDestinations } from './jwks-destination.js';
import { CLIENT_AUTH_METHOD_DEFAULT } from '../defaults.js';

export { CLIENT_SIGNING_ALGORITHMS, type ClientSigningAlgorithm } from './client-jwks.js';

const scrypt = promisify(scryptCallback) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export type GrantType =
  | 'authorization_code'
  | 'urn:openid:params:grant-type:ciba'
  | 'refresh_token'
  | 'client_credentials'
  | 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export const CIBA_GRANT: GrantType = 'urn:openid:params:grant-type:ciba';
/** RFC 7523 §2.1: a JWT as an authorization grant (the CAMARA profile's JWT bearer flow). */
export const JWT_BEARER_GRANT: GrantType = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
/** Every grant type a client may be registered for, in the order discovery lists them; `true` where the grant needs `redirectUris`. */
const GRANT_TYPES: Record<GrantType, boolean> = {
  authorization_code: true,
  'urn:openid:params:grant-type:ciba': false,
  refresh_token: false,
  client_credentials: false,
  'urn:ietf:params:oauth:grant-type:jwt-bearer': false,
};
/** Every grant type of the token endpoint, in the order discovery lists them. */
export const SUPPORTED_GRANT_TYPES = Object.keys(GRANT_TYPES) as readonly GrantType[];
/** Every client-authentication method, in the order discovery lists them. */
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
];

/**
 * An application as registered in the gateway's developer portal. Read-only to the gateway: a registry that changes
 * a registration (a rotated secret, new keys or scopes) returns the changed record, or edits the one it returned;
 * either way the next request uses what the record says then (the gateway's caches key on its content).
 */
export interface RegisteredClient {
  /** The identifier the developer portal gave the application (`client_id`). */
  readonly clientId: string;
  /** Display name shown on the consent page. */
  readonly name?: string;
  /**
   * The secret, or its hash from `hashClientSecret()` (`sha256:` for generated high-entropy secrets,
   * `scrypt:` for human-chosen ones). Exactly one of the two, except for `private_key_jwt` clients, which have neither.
   */
  readonly clientSecret?: string;
  /** The secret's hash from `hashClientSecret()`, instead of `clientSecret`: what production registers. */
  readonly clientSecretHash?: string;
  /**
   * Exact strings; the request's redirect_uri must equal one of them character for character.
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.1.2 | RFC 6749 §3.1.2}
   */
  readonly redirectUris?: readonly string[];
  /**
   * The grants the client may use. `refresh_token`: refresh tokens for the code and CIBA grants when the
   * subscriber grants `offline_access`; `client_credentials`: two-legged tokens for scopes whose policy rule says
   * `personalData: false`; the JWT bearer grant needs the client's keys (`jwks` or `jwksUri`).
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`grant_types`)
   */
  readonly grantTypes: readonly GrantType[];
  /** Scopes the client may request, as `dpv:<Purpose>#<scope>`. */
  readonly scopes: readonly string[];
  /**
   * How the client authenticates at the token endpoint. `client_secret_post` must be chosen per client.
   * `private_key_jwt` (RFC 7523, the CAMARA profile's method) needs `jwks` or `jwksUri`. A client authenticates only with its method.
   * @defaultValue `client_secret_basic`
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`token_endpoint_auth_method`)
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-2.3 | RFC 6749 §2.3}
   */
  readonly tokenEndpointAuthMethod?: ClientAuthMethod;
  /**
   * The client's PUBLIC keys, as a JWK Set: they verify its client assertions and signed request objects.
   * RSA (at least 2048 bits), EC P-256 / P-384 or Ed25519. Give this or `jwksUri`, not both.
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`jwks`)
   */
  readonly jwks?: {
    /** Public JWKs, each with a `kid` when there are several. */
    readonly keys: readonly Readonly<JWK>[];
  };
  /**
   * Where the client publishes its JWK Set: `https:` to a public address, unless its origin is listed in
   * `clientJwks.internalOrigins`. Fetched at the address checked when its host was resolved, with a timeout and a
   * size limit, cached, and fetched again for an unknown `kid` at once (at most once per 10 s).
   * @see {@link https://www.rfc-editor.org/rfc/rfc7591#section-2 | RFC 7591 §2} (`jwks_uri`)
   */
  readonly jwksUri?: string;
  /**
   * Algorithms the client may sign with.
   * @defaultValue all of `CLIENT_SIGNING_ALGORITHMS`
   */
  readonly signingAlgorithms?: readonly ClientSigningAlgorithm[];
  /**
   * RFC 9101 `require_signed_request_object`: /authorize and /bc-authorize accept this client's requests only
   * as a signed `request` object; an unsigned request is `invalid_request`. Needs `jwks` or `jwksUri`.
   * @see {@link https://www.rfc-editor.org/rfc/rfc9101#section-10.5 | RFC 9101 §10.5}
   */
  readonly requireSignedRequestObject?: boolean;
  /**
   * Require PKCE (S256) on the frontend flow.
   * @see {@link https://www.rfc-editor.org/rfc/rfc7636 | RFC 7636}
   */
  readonly requirePkce?: boolean;
  /**
   * RFC 9449 §5.2 `dpop_bound_access_tokens`: every token request of this client must carry a DPoP proof (else 400
   * `invalid_dpop_proof`), so its access tokens are always sender-constrained. Any client's valid proof binds its token.
   * @see {@link https://www.rfc-editor.org/rfc/rfc9449#section-5.2 | RFC 9449 §5.2}
   */
  readonly dpopBoundAccessTokens?: boolean;
}

/** Where the router looks up clients: your developer portal's database, or a static list. */
export interface ClientRegistry {
  find(clientId: string): Promise<RegisteredClient | undefined>;
  /**
   * The `tokenEndpointAuthMethod`s your clients use, as discovery advertises them
   * (`token_endpoint_auth_methods_supported`).
   * @defaultValue `['client_secret_basic']`
   * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-2 | RFC 8414 §2} (`token_endpoint_auth_methods_supported`)
   */
  readonly authMethods?: readonly ClientAuthMethod[];
  /**
   * The `grantTypes` your clients use, as discovery advertises them (`grant_types_supported`).
   * @defaultValue `['authorization_code', 'urn:openid:params:grant-type:ciba']`
   * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-2 | RFC 8414 §2} (`grant_types_supported`)
   */
  readonly grantTypes?: readonly GrantType[];
}

const sha256 = sha256Bytes;

/** The registered side's digest, and the fields it was computed from. */
interface RegisteredDigest {
  secret: string | undefined;
  hash: string | undefined;
  digest: Buffer | undefined;
}

/**
 * The registered side's digest, computed once per registration object and computed again when the object's
 * secret fields change (a registry that rotates a secret by editing the record it returned): the fields are
 * compared by identity, which costs nothing while they stay the same.
 */
const registeredDigests = new WeakMap<RegisteredClient, RegisteredDigest>();

function registeredDigest(client: RegisteredClient): Buffer | undefined {
  const cached = registeredDigests.get(client);
  if (cached?.secret === client.clientSecret && cached?.hash === client.clientSecretHash) return cached?.digest;
  let digest: Buffer | undefined;
  if (client.clientSecretHash !== undefined) {
    const [algorithm, a] = client.clientSecretHash.split(':');
    digest = algorithm === 'sha256' && a ? Buffer.from(a, 'base64url') : undefined;
  } else if (client.clientSecret !== undefined) {
    digest = sha256(client.clientSecret);
  }
  registeredDigests.set(client, { secret: client.clientSecret, hash: client.clientSecretHash, digest });
  return digest;
}

/**
 * Hashes a client secret for registration. `sha256` (the default) suits the random secrets a portal
 * generates and costs nothing per request; use `scrypt` for secrets a person chose.
 */
export async function hashClientSecret(secret: string, algorithm: 'sha256' | 'scrypt' = 'sha256'): Promise<string> {
  if (algorithm === 'sha256') return `sha256:${sha256(secret).toString('base64url')}`;
  const salt = randomBytes(16);
  const hash = await scrypt(secret, salt, 32);
  return `scrypt:${salt.toString('base64url')}:${hash.toString('base64url')}`;
}

/** Who presents a secret: the source address's counting key (`addressKey`), for the scrypt queue's rank. */
export interface SecretRequester {
  address: string;
}

/**
 * Compares a presented secret with the registration in constant time: both sides are reduced to
 * fixed-length digests first, so neither length nor content leaks through timing. A `scrypt:` check waits
 * its turn behind the process-wide limit, and rejects with 503 temporarily_unavailable when too many wait; with
 * a `requester`, its turn is ranked by the recent failures of its address and client id, a wrong secret adds to
 * them, and a secret that verified lately is accepted again without a derivation (`secret-history.ts`).
 */
export async function verifyClientSecret(
  client: RegisteredClient,
  presented: string,
  requester?: SecretRequester,
): Promise<boolean> {
  const expected = registeredDigest(client);
  let verified = false;
  if (expected !== undefined) {
    verified = expected.length === 32 && timingSafeEqual(expected, sha256(presented));
  } else if (client.clientSecretHash !== undefined) {
    const hash = client.clientSecretHash;
    const [algorithm, a, b] = hash.split(':');
    if (algorithm === 'scrypt' && a && b) {
      if (secretHistory.verifiedRecently(client.clientId, hash, presented)) return true;
      const expectedKey = Buffer.from(b, 'base64url');
      const rank = requester === undefined ? 0 : secretHistory.rank(client.clientId, requester.address);
      const actual = await scryptLimiter.scrypt(presented, Buffer.from(a, 'base64url'), expectedKey.length, rank);
      verified = timingSafeEqual(expectedKey, actual);
      if (verified) secretHistory.rememberVerified(client.clientId, hash, presented);
    }
  }
  if (!verified && requester !== undefined) secretHistory.rememberFailure(client.clientId, requester.address);
  return verified;
}

/**
 * Registration rules for a redirect URI (RFC 9700 §2.1, §4.1; RFC 8252 §7): absolute, no fragment, and
 * `http:` only for loopback (development and native apps); private-use schemes serve native apps.
 */
export function checkRedirectUri(clientId: string, uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new TypeError(`client ${clientId}: redirect URI "${uri}" is not an absolute URI`);
  }
  if (url.hash !== '' || uri.includes('#'))
    throw new TypeError(`client ${clientId}: redirect URI "${uri}" has a fragment`);
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    throw new TypeError(`client ${clientId}: redirect URI "${uri}" uses http: outside loopback; use https:`);
  }
}

const CLIENT_FIELDS = optionNames<RegisteredClient>({
  clientId: true,
  name: true,
  clientSecret: true,
  clientSecretHash: true,
  redirectUris: true,
  grantTypes: true,
  scopes: true,
  tokenEndpointAuthMethod: true,
  jwks: true,
  jwksUri: true,
  signingAlgorithms: true,
  requireSignedRequestObject: true,
  requirePkce: true,
  dpopBoundAccessTokens: true,
});

/** What `hashClientSecret()` makes: a SHA-256 digest (32 bytes), or an scrypt salt and hash. */
const SECRET_HASH = /^(?:sha256:[A-Za-z0-9_-]{43}|scrypt:[A-Za-z0-9_-]{16,}:[A-Za-z0-9_-]{22,})$/;
/** The protocol scopes are no API's: what registers them instead. */
const PROTOCOL_SCOPE_ADVICE = new Map<unknown, string>([
  ['openid', 'is a protocol scope every client may request (an ID token comes with it): leave it out of scopes'],
  [
    'offline_access',
    "is a protocol scope (a refresh token): leave it out of scopes and add 'refresh_token' to grantTypes",
  ],
]);

/** A registered scope, exactly as requests are matched against it: `dpv:<Purpose>#<scope>`. */
const REGISTERED_SCOPE = new RegExp(`^dpv:(${PURPOSE.source.slice(1, -1)})#(${API_SCOPE.source.slice(1, -1)})$`);

/** A registered scope's purpose and API scope; undefined when it is not of the `dpv:<Purpose>#<scope>` form. */
export function registeredScope(scope: string): { purpose: string; scope: string } | undefined {
  const match = REGISTERED_SCOPE.exec(scope);
  return match ? { purpose: match[1]!, scope: match[2]! } : undefined;
}

function list(client: RegisteredClient, field: 'redirectUris' | 'grantTypes' | 'scopes'): readonly unknown[] {
  const value: unknown = client[field];
  if (value === undefined && field === 'redirectUris') return [];
  if (!Array.isArray(value))
    throw new TypeError(`client ${client.clientId}: ${field} must be a list, not ${describe(value)}`);
  if (value.length === 0 && field !== 'redirectUris') {
    throw new TypeError(
      `client ${client.clientId}: ${field} is empty, so the client can do nothing; list at least one`,
    );
  }
  return value;
}

/**
 * The registration's own fields, before its credentials and keys: known names and types, grant types the
 * gateway has, redirect URIs where a grant needs them, scopes of the form requests are matched against.
 * Each is a client that would start silently and then fail on every request.
 */
function checkFields(client: RegisteredClient): void {
  if (!isPlainObject(client))
    throw new TypeError(
      `clients: each registration must be an object ({ clientId, grantTypes, scopes, ... }), not ${describe(client)}`,
    );
  if (typeof client.clientId !== 'string' || client.clientId === '') {
    throw new TypeError(
      `clients: a registration has clientId ${describe(client.clientId)}; give each client its non-empty string id`,
    );
  }
  const id = client.clientId;
  checkNames(client as unknown as Record<string, unknown>, CLIENT_FIELDS, `client ${id}: `, 'field');
  checkString(client.name, `client ${id}: name`, 'shown on the consent page');
  checkString(client.clientSecret, `client ${id}: clientSecret`, 'the secret itself');
  if (
    client.clientSecretHash !== undefined &&
    (typeof client.clientSecretHash !== 'string' || !SECRET_HASH.test(client.clientSecretHash))
  ) {
    throw new TypeError(
      `client ${id}: clientSecretHash is not a hash from hashClientSecret() ("sha256:<43 base64url characters>" or ` +
        `"scrypt:<salt>:<hash>"), so no secret would ever match; register await hashClientSecret(secret) (or the secret as clientSecret)`,
    );
  }
  for (const grant of list(client, 'grantTypes')) {
    if (typeof grant !== 'string' || !Object.hasOwn(GRANT_TYPES, grant)) {
      throw new TypeError(
        `client ${id}: grantTypes: ${JSON.stringify(grant)} is not a grant type of this gateway; use ${Object.keys(GRANT_TYPES).join(' or ')}`,
      );
    }
  }
  const redirectUris = list(client, 'redirectUris');
  for (const uri of redirectUris) {
    if (typeof uri !== 'string')
      throw new TypeError(`client ${id}: redirectUris must hold strings (exact URIs), not ${describe(uri)}`);
  }
  const needing = client.grantTypes.find((g) => GRANT_TYPES[g]);
  if (needing !== undefined && redirectUris.length === 0) {
    throw new TypeError(
      `client ${id}: grant type ${needing} needs redirectUris (the exact callback URIs); add them, or remove the grant type`,
    );
  }
  for (const scope of list(client, 'scopes')) {
    const protocol = PROTOCOL_SCOPE_ADVICE.get(scope);
    if (protocol !== undefined) throw new TypeError(`client ${id}: scopes: ${scope} ${protocol}`);
    if (typeof scope !== 'string' || registeredScope(scope) === undefined) {
      throw new TypeError(
        `client ${id}: scopes: ${JSON.stringify(scope)} is not of the form dpv:<Purpose>#<scope> (e.g. dpv:FraudPreventionAndDetection#sim-swap), ` +
          'the form requests are matched against; write it so',
      );
    }
  }
  checkBoolean(client.requirePkce, `client ${id}: requirePkce`);
  checkBoolean(client.requireSignedRequestObject, `client ${id}: requireSignedRequestObject`);
  checkBoolean(client.dpopBoundAccessTokens, `client ${id}: dpopBoundAccessTokens`);
}

/** How the client authenticates: a secret (exactly one form of it), or keys and no secret. */
function checkCredentials(client: RegisteredClient): void {
  const method = client.tokenEndpointAuthMethod ?? CLIENT_AUTH_METHOD_DEFAULT;
  if (!CLIENT_AUTH_METHODS.includes(method)) {
    throw new TypeError(
      `client ${client.clientId}: tokenEndpointAuthMethod "${String(method)}" is not one of ${CLIENT_AUTH_METHODS.join(', ')}`,
    );
  }
  const hasSecret = client.clientSecret !== undefined || client.clientSecretHash !== undefined;
  if (method === 'private_key_jwt') {
    if (hasSecret)
      throw new TypeError(
        `client ${client.clientId}: a private_key_jwt client authenticates with its keys; remove clientSecret / clientSecretHash`,
      );
    if (client.jwks === undefined && client.jwksUri === undefined) {
      throw new TypeError(
        `client ${client.clientId}: private_key_jwt needs the client's public keys: give jwks or jwksUri`,
      );
    }
  } else if ((client.clientSecret === undefined) === (client.clientSecretHash === undefined)) {
    throw new TypeError(
      `client ${client.clientId}: give exactly one of clientSecret and clientSecretHash (or use tokenEndpointAuthMethod 'private_key_jwt' with keys)`,
    );
  }
  if (client.requireSignedRequestObject && client.jwks === undefined && client.jwksUri === undefined) {
    throw new TypeError(
      `client ${client.clientId}: requireSignedRequestObject needs the client's public keys to verify requests: give jwks or jwksUri`,
    );
  }
}

/**
 * The grant types a client asks for can work together (each is one of the gateway's: `checkFields`): a refresh
 * token has a grant to come from (the code or CIBA grant), and a JWT bearer assertion has keys to verify it.
 */
function checkGrantTypes(client: RegisteredClient): void {
  const id = client.clientId;
  if (
    client.grantTypes.includes('refresh_token') &&
    !client.grantTypes.some((g) => g === 'authorization_code' || g === CIBA_GRANT)
  ) {
    throw new TypeError(
      `client ${id}: refresh tokens come only from the authorization_code and CIBA grants; register one of them beside refresh_token, or remove it`,
    );
  }
  if (client.grantTypes.includes(JWT_BEARER_GRANT) && client.jwks === undefined && client.jwksUri === undefined) {
    throw new TypeError(
      `client ${id}: the JWT bearer grant verifies assertions with the client's public keys: give jwks or jwksUri`,
    );
  }
}

/**
 * Every check of one registration, as a TypeError naming the client and the field: a static list's at start-up,
 * any other registry's records as they are found (`client-checks.ts`).
 */
export function checkRegistration(client: RegisteredClient): void {
  checkFields(client);
  checkCredentials(client);
  checkGrantTypes(client);
  checkClientKeys(client.clientId, client);
  for (const uri of client.redirectUris ?? []) checkRedirectUri(client.clientId, uri);
}

/** A deep copy, frozen all the way down. */
function frozenCopy<T>(value: T): T {
  const copy = structuredClone(value);
  const freeze = (node: unknown): void => {
    if (node === null || typeof node !== 'object' || Object.isFrozen(node)) return;
    Object.freeze(node);
    for (const child of Object.values(node)) freeze(child);
  };
  freeze(copy);
  return copy;
}

/**
 * A registry from a fixed list (the embedded default). Every registration is checked here, at start-up, and kept
 * as a frozen copy: what was checked is what every request uses, whatever later happens to the objects given.
 */
export class StaticClientRegistry implements ClientRegistry {
  private readonly clients = new Map<string, RegisteredClient>();
  readonly authMethods: readonly ClientAuthMethod[];
  readonly grantTypes: readonly GrantType[];

  /**
   * `jwks.internalOrigins`: the origins whose `jwksUri`s may use `http:` or name internal addresses, as the
   * gateway's `clientJwks.internalOrigins` (the router builds its static list with them).
   */
  constructor(clients: readonly RegisteredClient[], jwks: { internalOrigins?: readonly string[] } = {}) {
    if (!Array.isArray(clients)) throw new TypeError('clients must be a list of registrations or a ClientRegistry');
    const destinations = new JwksDestinations(jwks.internalOrigins);
    for (const client of clients) {
      checkRegistration(client);
      if (client.jwksUri !== undefined) destinations.check(client.clientId, client.jwksUri);
      if (this.clients.has(client.clientId)) throw new TypeError(`client ${client.clientId} is registered twice`);
      this.clients.set(client.clientId, frozenCopy(client));
    }
    const used = new Set(clients.map((c) => c.tokenEndpointAuthMethod ?? CLIENT_AUTH_METHOD_DEFAULT));
    this.authMethods = CLIENT_AUTH_METHODS.filter((m) => used.has(m));
    const granted = new Set(clients.flatMap((c) => c.grantTypes));
    this.grantTypes = SUPPORTED_GRANT_TYPES.filter((g) => granted.has(g));
  }

  async find(clientId: string): Promise<RegisteredClient | undefined> {
    return this.clients.get(clientId);
  }

  /** Every registration, in the order given (the client-authentication decoy reads which secret hashes are used). */
  list(): readonly RegisteredClient[] {
    return [...this.clients.values()];
  }
}
