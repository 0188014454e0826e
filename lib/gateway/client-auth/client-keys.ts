import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { RegisteredClient } from '../../registry/clients.js';
import { CLIENT_JWKS_DEFAULTS } from '../../defaults.js';
import type { ClientJwksOptions } from '../options.js';
import { JwksDestinationRefusedError, JwksDestinations, type PinnedAddress } from '../../registry/jwks-destination.js';

/**
 * After a failed fetch, the next waits this long (milliseconds): a broken `jwksUri` is not asked on every request.
 */
export const JWKS_REFETCH_COOLDOWN = 60_000;

/**
 * An unknown `kid` (the client rotated its keys) fetches the set again at once, unless a fetch of this client
 * started less than this long ago (milliseconds): a rotated-in key is refused for at most 10 s, and a forger's
 * stream of unknown kids makes the gateway ask the client's server at most once per 10 s.
 */
export const JWKS_UNKNOWN_KID_COOLDOWN = 10_000;

/** A `jwksUri` that could not be fetched or did not hold a JWK Set: the client's JWTs cannot be verified now. */
export class ClientKeysUnavailableError extends Error {
  /** Stable identifier for handlers and logs; the message may change. */
  readonly code = 'NETAUTH_CLIENT_KEYS_UNAVAILABLE';

  constructor(reason: string) {
    super(`the client's jwks_uri ${reason}`);
    this.name = 'ClientKeysUnavailableError';
  }
}

interface RemoteKeys {
  uri: string;
  keys: JWTVerifyGetKey | undefined;
  /** Clock (ms) of the last successful fetch. */
  fetchedAt: number;
  /** Clock (ms) of the last fetch started, successful or not. */
  attemptedAt: number;
  /** The fetch in flight: concurrent requests of this client wait for it instead of starting their own. */
  pending: Promise<void> | undefined;
}

/** Reads at most `maxBytes` of a response body; more is an error, and the rest is never read. */
async function readCapped(response: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers['content-length']);
  if (declared > maxBytes) {
    response.destroy();
    throw new ClientKeysUnavailableError(`answered more than ${maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response) {
    total += (chunk as Buffer).byteLength;
    if (total > maxBytes) {
      response.destroy();
      throw new ClientKeysUnavailableError(`answered more than ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** A lookup that answers the address already resolved and checked: the connection goes where the policy allowed. */
function pinnedLookup(pinned: PinnedAddress): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  }) as unknown as LookupFunction;
}

/** GET `uri` at the pinned address; redirects are not followed (the registered URL serves the set or nothing does). */
function get(uri: string, pinned: PinnedAddress, signal: AbortSignal): Promise<IncomingMessage> {
  const url = new URL(uri);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, {
      method: 'GET',
      // A fresh connection per fetch (at most one a minute per client): no pooled socket outlives the check.
      agent: false,
      lookup: pinnedLookup(pinned),
      signal,
      headers: { accept: 'application/jwk-set+json, application/json' },
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end();
  });
}

/**
 * The keys that verify each client's JWTs (client assertions, request objects): its inline `jwks`, or its
 * `jwksUri` fetched and cached per client. jose's `createRemoteJWKSet` is not used because it reads a
 * response whole, with no size limit, and retries a failing URL on every request; here a fetch is bounded in
 * time (`AbortSignal.timeout`) and size (a byte cap while reading), at most one runs per client at a time and
 * one starts per client per minute (per 10 s for an unknown `kid`), and the JSON goes to jose's `createLocalJWKSet`. State is per client: a
 * slow or broken `jwksUri` only ever delays its own client.
 */
export class ClientKeys {
  private readonly inline = new Map<string, { source: string; keys: JWTVerifyGetKey }>();
  private readonly remote = new Map<string, RemoteKeys>();
  private readonly fetchTimeout: number;
  private readonly maxBytes: number;
  private readonly cacheMaxAge: number;
  private readonly destinations: JwksDestinations;

  constructor(
    options: ClientJwksOptions,
    private readonly now: () => number,
  ) {
    this.fetchTimeout = positive('clientJwks.fetchTimeout', options.fetchTimeout, CLIENT_JWKS_DEFAULTS.fetchTimeout);
    this.maxBytes = positive('clientJwks.maxBytes', options.maxBytes, CLIENT_JWKS_DEFAULTS.maxBytes);
    this.cacheMaxAge = positive('clientJwks.cacheMaxAge', options.cacheMaxAge, CLIENT_JWKS_DEFAULTS.cacheMaxAge) * 1000;
    this.destinations = new JwksDestinations(options.internalOrigins);
  }

  /** The destination policy for `jwksUri`s: registrations are checked against it, fetches pinned by it. */
  get destinationPolicy(): JwksDestinations {
    return this.destinations;
  }

  /** Whether the client registered keys at all. */
  has(client: RegisteredClient): boolean {
    return client.jwks !== undefined || client.jwksUri !== undefined;
  }

  /** The key resolver for `jose.jwtVerify`; undefined when the client has no keys. */
  resolver(client: RegisteredClient): JWTVerifyGetKey | undefined {
    if (client.jwks !== undefined) return this.inlineKeys(client.clientId, client.jwks);
    const uri = client.jwksUri;
    if (uri === undefined) return undefined;
    return (header, token) => this.remoteKey(client.clientId, uri, header, token);
  }

  private inlineKeys(clientId: string, jwks: NonNullable<RegisteredClient['jwks']>): JWTVerifyGetKey {
    // By client id and content, never by object: a registry may edit the set it returned (a rotated key), or build a
    // new object per lookup; either way the keys imported are the ones the record holds now.
    const source = JSON.stringify(jwks);
    const cached = this.inline.get(clientId);
    if (cached?.source === source) return cached.keys;
    let keys: JWTVerifyGetKey;
    try {
      // Imported from the serialised set: a later edit of the record's objects cannot reach the imported keys.
      keys = createLocalJWKSet(JSON.parse(source) as JSONWebKeySet);
    } catch {
      // A custom registry's malformed set: nothing verifies (the static registry refuses it at start-up).
      return () => Promise.reject(new errors.JWKSInvalid('the registered jwks is not a JWK Set'));
    }
    this.inline.set(clientId, { source, keys });
    return keys;
  }

  private async remoteKey(
    clientId: string,
    uri: string,
    ...args: Parameters<JWTVerifyGetKey>
  ): Promise<Awaited<ReturnType<JWTVerifyGetKey>>> {
    let state = this.remote.get(clientId);
    if (state?.uri !== uri) {
      state = { uri, keys: undefined, fetchedAt: -Infinity, attemptedAt: -Infinity, pending: undefined };
      this.remote.set(clientId, state);
    }
    if (!this.fresh(state)) {
      await this.refresh(state);
      if (!this.fresh(state))
        throw new ClientKeysUnavailableError('could not be fetched (retried at most once a minute)');
    }
    try {
      return await state.keys!(...args);
    } catch (error) {
      // An unknown kid: the client may have rotated its keys. Fetch again, at most once per 10 s.
      if (!(error instanceof errors.JWKSNoMatchingKey) || !this.mayFetch(state, JWKS_UNKNOWN_KID_COOLDOWN)) throw error;
      await this.refresh(state, JWKS_UNKNOWN_KID_COOLDOWN);
      return state.keys!(...args);
    }
  }

  private fresh(state: RemoteKeys): boolean {
    return state.keys !== undefined && this.now() - state.fetchedAt < this.cacheMaxAge;
  }

  private mayFetch(state: RemoteKeys, cooldown: number): boolean {
    return state.pending !== undefined || this.now() - state.attemptedAt >= cooldown;
  }

  /** Fetches the client's set unless a fetch is in flight (then waits for it) or one started within `cooldown` ms. */
  private refresh(state: RemoteKeys, cooldown = JWKS_REFETCH_COOLDOWN): Promise<void> {
    if (state.pending !== undefined) return state.pending;
    if (!this.mayFetch(state, cooldown)) return Promise.resolve();
    state.attemptedAt = this.now();
    const pending = this.fetchKeys(state.uri).then(
      (keys) => {
        state.keys = keys;
        state.fetchedAt = this.now();
      },
      // A failed fetch keeps the set we had (while it is fresh); the request fails with invalid_client.
      () => undefined,
    );
    state.pending = pending.finally(() => {
      state.pending = undefined;
    });
    return state.pending;
  }

  private async fetchKeys(uri: string): Promise<JWTVerifyGetKey> {
    const signal = AbortSignal.timeout(this.fetchTimeout);
    let pinned: PinnedAddress;
    try {
      pinned = await this.destinations.resolve(uri);
    } catch (error) {
      if (error instanceof JwksDestinationRefusedError) throw new ClientKeysUnavailableError(error.message);
      throw error;
    }
    const response = await get(uri, pinned, signal);
    if (response.statusCode !== 200) {
      response.destroy();
      throw new ClientKeysUnavailableError(`answered ${response.statusCode ?? 'nothing'}`);
    }
    const body = await readCapped(response, this.maxBytes);
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
    } catch {
      throw new ClientKeysUnavailableError('did not answer JSON');
    }
    // jose checks the shape ({keys: [...]}) here and refuses private members when a key is used.
    return createLocalJWKSet(json as Parameters<typeof createLocalJWKSet>[0]);
  }
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}
