import { scrypt as scryptCallback, randomBytes, timingSafeEqual } from 'node:crypto';
import type { JWK } from 'jose';
import { sha256Bytes } from '../crypto.js';
import { promisify } from 'node:util';
import { checkClientKeys, LOOPBACK_HOSTS, type ClientSigningAlgorithm } from './client-jwks.js';

export { CLIENT_SIGNING_ALGORITHMS, type ClientSigningAlgorithm } from './client-jwks.js';

const scrypt = promisify(scryptCallback) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export type GrantType = 'authorization_code' | 'urn:openid:params:grant-type:ciba';
export const CIBA_GRANT: GrantType = 'urn:openid:params:grant-type:ciba';
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
/** Every client-authentication method, in the order discovery lists them. */
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];

/** An application as registered in the gateway's developer portal. */
export interface RegisteredClient {
  clientId: string;
  /** Display name shown on the consent page. */
  name?: string;
  /**
   * The secret, or its hash from `hashClientSecret()` (`sha256:` for generated high-entropy secrets,
   * `scrypt:` for human-chosen ones). Exactly one of the two, except for `private_key_jwt` clients, which have neither.
   */
  clientSecret?: string;
  clientSecretHash?: string;
  /** Exact strings; the request's redirect_uri must equal one of them character for character. */
  redirectUris?: string[];
  grantTypes: GrantType[];
  /** Scopes the client may request, as `dpv:<Purpose>#<scope>`. */
  scopes: string[];
  /**
   * Default `client_secret_basic`. `client_secret_post` must be chosen per client. `private_key_jwt` (RFC 7523,
   * the CAMARA profile's method) needs `jwks` or `jwksUri`. A client authenticates only with its method.
   */
  tokenEndpointAuthMethod?: ClientAuthMethod;
  /**
   * The client's PUBLIC keys, as a JWK Set: they verify its client assertions and signed request objects.
   * RSA (at least 2048 bits), EC P-256 / P-384 or Ed25519. Give this or `jwksUri`, not both.
   */
  jwks?: { keys: JWK[] };
  /**
   * Where the client publishes its JWK Set (`https:`, or `http:` on loopback). Fetched with a timeout and a
   * size limit, cached, and fetched again for an unknown `kid` at most once a minute.
   */
  jwksUri?: string;
  /** Algorithms the client may sign with. Default: all of `CLIENT_SIGNING_ALGORITHMS`. */
  signingAlgorithms?: ClientSigningAlgorithm[];
  /**
   * RFC 9101 `require_signed_request_object`: /authorize and /bc-authorize accept this client's requests only
   * as a signed `request` object; an unsigned request is `invalid_request`. Needs `jwks` or `jwksUri`.
   */
  requireSignedRequestObject?: boolean;
  /** Require PKCE (S256) on the frontend flow. */
  requirePkce?: boolean;
  /**
   * RFC 9449 §5.2 `dpop_bound_access_tokens`: every token request of this client must carry a DPoP proof (else 400
   * `invalid_dpop_proof`), so its access tokens are always sender-constrained. Any client's valid proof binds its token.
   */
  dpopBoundAccessTokens?: boolean;
}

/** Where the router looks up clients: your developer portal's database, or a static list. */
export interface ClientRegistry {
  find(clientId: string): Promise<RegisteredClient | undefined>;
  /**
   * The `tokenEndpointAuthMethod`s your clients use, as discovery advertises them
   * (`token_endpoint_auth_methods_supported`). Default `['client_secret_basic']`.
   */
  readonly authMethods?: readonly ClientAuthMethod[];
}

const sha256 = sha256Bytes;

/** The registered side's digest never changes: computed once per registration object. */
const registeredDigests = new WeakMap<RegisteredClient, Buffer>();

function registeredDigest(client: RegisteredClient): Buffer | undefined {
  let digest = registeredDigests.get(client);
  if (digest === undefined) {
    if (client.clientSecretHash !== undefined) {
      const [algorithm, a] = client.clientSecretHash.split(':');
      if (algorithm !== 'sha256' || !a) return undefined;
      digest = Buffer.from(a, 'base64url');
    } else if (client.clientSecret !== undefined) {
      digest = sha256(client.clientSecret);
    } else {
      return undefined;
    }
    registeredDigests.set(client, digest);
  }
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

/**
 * Compares a presented secret with the registration in constant time: both sides are reduced to
 * fixed-length digests first, so neither length nor content leaks through timing.
 */
export async function verifyClientSecret(client: RegisteredClient, presented: string): Promise<boolean> {
  const expected = registeredDigest(client);
  if (expected !== undefined) return expected.length === 32 && timingSafeEqual(expected, sha256(presented));
  if (client.clientSecretHash !== undefined) {
    const [algorithm, a, b] = client.clientSecretHash.split(':');
    if (algorithm === 'scrypt' && a && b) {
      const expected = Buffer.from(b, 'base64url');
      const actual = await scrypt(presented, Buffer.from(a, 'base64url'), expected.length);
      return timingSafeEqual(expected, actual);
    }
  }
  return false;
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
  if (url.hash !== '' || uri.includes('#')) throw new TypeError(`client ${clientId}: redirect URI "${uri}" has a fragment`);
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    throw new TypeError(`client ${clientId}: redirect URI "${uri}" uses http: outside loopback; use https:`);
  }
}

/** How the client authenticates: a secret (exactly one form of it), or keys and no secret. */
function checkCredentials(client: RegisteredClient): void {
  const method = client.tokenEndpointAuthMethod ?? 'client_secret_basic';
  if (!CLIENT_AUTH_METHODS.includes(method)) {
    throw new TypeError(`client ${client.clientId}: tokenEndpointAuthMethod "${String(method)}" is not one of ${CLIENT_AUTH_METHODS.join(', ')}`);
  }
  const hasSecret = client.clientSecret !== undefined || client.clientSecretHash !== undefined;
  if (method === 'private_key_jwt') {
    if (hasSecret) throw new TypeError(`client ${client.clientId}: a private_key_jwt client authenticates with its keys; remove clientSecret / clientSecretHash`);
    if (client.jwks === undefined && client.jwksUri === undefined) {
      throw new TypeError(`client ${client.clientId}: private_key_jwt needs the client's public keys: give jwks or jwksUri`);
    }
  } else if ((client.clientSecret === undefined) === (client.clientSecretHash === undefined)) {
    throw new TypeError(`client ${client.clientId}: give exactly one of clientSecret and clientSecretHash (or use tokenEndpointAuthMethod 'private_key_jwt' with keys)`);
  }
  if (client.dpopBoundAccessTokens !== undefined && typeof client.dpopBoundAccessTokens !== 'boolean') {
    throw new TypeError(`client ${client.clientId}: dpopBoundAccessTokens must be true or false`);
  }
  if (client.requireSignedRequestObject && client.jwks === undefined && client.jwksUri === undefined) {
    throw new TypeError(`client ${client.clientId}: requireSignedRequestObject needs the client's public keys to verify requests: give jwks or jwksUri`);
  }
}

/** A registry from a fixed list (the embedded default). Every registration is checked here, at start-up. */
export class StaticClientRegistry implements ClientRegistry {
  private readonly clients = new Map<string, RegisteredClient>();
  readonly authMethods: readonly ClientAuthMethod[];

  constructor(clients: readonly RegisteredClient[]) {
    for (const client of clients) {
      checkCredentials(client);
      checkClientKeys(client.clientId, client);
      if (this.clients.has(client.clientId)) throw new TypeError(`client ${client.clientId} is registered twice`);
      for (const uri of client.redirectUris ?? []) checkRedirectUri(client.clientId, uri);
      this.clients.set(client.clientId, client);
    }
    const used = new Set(clients.map((c) => c.tokenEndpointAuthMethod ?? 'client_secret_basic'));
    this.authMethods = CLIENT_AUTH_METHODS.filter((m) => used.has(m));
  }

  async find(clientId: string): Promise<RegisteredClient | undefined> {
    return this.clients.get(clientId);
  }

  /** Every registration, in the order given (the client-authentication decoy reads which secret hashes are used). */
  list(): readonly RegisteredClient[] {
    return [...this.clients.values()];
  }
}
