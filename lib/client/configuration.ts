import { AsyncLocalStorage } from 'node:async_hooks';
import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { setTimeout as timer } from 'node:timers/promises';
import { SignJWT, importJWK, type JWK } from 'jose';
import * as oidc from 'openid-client';
import type { ClientPrivateKey, NetAuthClientOptions } from './options.js';
import { NetAuthClientError, fromOpenIdClientError } from './errors.js';
import { CLIENT_DEFAULTS } from '../defaults.js';

/** The application's signing key, imported, with the JWS algorithm it signs assertions and requests with. */
export interface ClientSigner {
  key: oidc.CryptoKey;
  kid: string | undefined;
  alg: string;
  /** Sign authorization requests too (JAR, signed bc-authorize). */
  signRequests: boolean;
  /** What the JWTs it signs name as `aud`: the issuer, or the URL of the endpoint they are sent to. */
  audience: 'issuer' | 'endpoint';
}

/** The endpoints a JWT of this client is sent to. */
export type SignedFor = 'token_endpoint' | 'authorization_endpoint' | 'backchannel_authentication_endpoint';

/** The `aud` of a JWT the client signs for an endpoint: the issuer, or that endpoint's URL (`assertionAudience`). */
export function audienceFor(config: oidc.Configuration, signer: ClientSigner, endpoint: SignedFor): string {
  const metadata = config.serverMetadata();
  return signer.audience === 'endpoint' ? (metadata[endpoint] ?? metadata.issuer) : metadata.issuer;
}

/** What the client loads once: the gateway's configuration, the signing key, and the DPoP handle when `dpop` is on. */
export interface LoadedClient {
  config: oidc.Configuration;
  signer: ClientSigner | undefined;
  dpop: oidc.DPoPHandle | undefined;
}

/** What every part of the client works with: the options, the clock, and the lazily loaded gateway configuration. */
export interface ClientContext {
  options: NetAuthClientOptions;
  now: () => number;
  /** Waits between polls: the `sleep` option, else a timer. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  load(): Promise<LoadedClient>;
}

/** The `DPoP` option of openid-client's grant calls: the handle when the client proves possession, else none. */
export function dpopOption(dpop: oidc.DPoPHandle | undefined): oidc.DPoPOptions {
  return dpop ? { DPoP: dpop } : {};
}

/** The caller's AbortSignal for the request made inside `withSignal.run(signal, …)` (a service-API call through openid-client). */
export const withSignal = new AsyncLocalStorage<AbortSignal>();

/**
 * Whether the gateway was sent a request inside `sent.run(probe, …)`: a failure before any request lies in
 * the input (a forged callback), a failure after it in the gateway's answer.
 */
export const sent = new AsyncLocalStorage<{ sent: boolean }>();

const ALGORITHM_BY_KEY: Record<string, string> = {
  RSA: 'RS256',
  'EC/P-256': 'ES256',
  'EC/P-384': 'ES384',
  'EC/P-521': 'ES512',
  'OKP/Ed25519': 'EdDSA',
};

/** The JWS algorithm of a private JWK: its `alg`, else the usual one for its key type. */
function jwkAlgorithm(jwk: JWK): string {
  const alg = jwk.alg ?? ALGORITHM_BY_KEY[jwk.kty === 'RSA' ? 'RSA' : `${jwk.kty}/${jwk.crv}`];
  if (alg === undefined)
    throw new TypeError(
      `privateKey: a ${jwk.kty}${jwk.crv ? ` ${jwk.crv}` : ''} key has no JWS algorithm this client knows; give the JWK an "alg"`,
    );
  return alg;
}

/** The JWS algorithm a CryptoKey signs with (RS*, PS*, ES*, EdDSA), as jose and the gateway name it. */
function cryptoKeyAlgorithm(key: oidc.CryptoKey): string {
  const algorithm = key.algorithm as { name: string; hash?: { name: string }; namedCurve?: string };
  const bits = algorithm.hash?.name.replace('SHA-', '');
  switch (algorithm.name) {
    case 'RSASSA-PKCS1-v1_5':
      return `RS${bits}`;
    case 'RSA-PSS':
      return `PS${bits}`;
    case 'ECDSA': {
      const alg = ALGORITHM_BY_KEY[`EC/${algorithm.namedCurve}`];
      if (alg) return alg;
      break;
    }
    case 'Ed25519':
    case 'EdDSA':
      return 'EdDSA';
  }
  throw new TypeError(`privateKey: a ${algorithm.name} CryptoKey cannot sign JWS`);
}

function isJwk(key: ClientPrivateKey): key is JWK {
  return typeof (key as JWK).kty === 'string';
}

/** A private JWK option, checked: it must hold the private key (`d`), have a JWS algorithm, and import. */
function checkPrivateJwk(name: string, key: JWK): void {
  if (key.d === undefined)
    throw new TypeError(
      `createNetAuthClient: ${name} must be a PRIVATE JWK (it has no "d"); the gateway is given the public part`,
    );
  jwkAlgorithm(key);
  try {
    createPrivateKey({ key: key as JsonWebKey, format: 'jwk' });
  } catch (cause) {
    throw new TypeError(`createNetAuthClient: ${name} is not a usable private JWK`, {
      cause: new Error((cause as Error).message),
    });
  }
}

/** JWK members of the private part, dropped to publish the public key. */
const PRIVATE_PARTS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv', 'key_ops', 'use', 'alg']);

/**
 * The DPoP handle: openid-client's (`getDPoPHandle`), on the configured key or a fresh ES256 one. openid-client
 * names an Ed25519 proof's alg `Ed25519`; the gateways (docs/protocol.md, jose) accept it as `EdDSA`.
 */
async function dpopHandle(
  config: oidc.Configuration,
  option: NetAuthClientOptions['dpop'],
): Promise<oidc.DPoPHandle | undefined> {
  if (!option) return undefined;
  let keyPair: oidc.CryptoKeyPair;
  if (option === true) {
    keyPair = await oidc.randomDPoPKeyPair('ES256');
  } else {
    const alg = jwkAlgorithm(option.privateKey);
    const publicJwk = Object.fromEntries(
      Object.entries(option.privateKey).filter(([member]) => !PRIVATE_PARTS.has(member)),
    ) as JWK;
    keyPair = {
      privateKey: (await importJWK(option.privateKey, alg)) as oidc.CryptoKey,
      publicKey: (await importJWK(publicJwk, alg, { extractable: true })) as oidc.CryptoKey,
    };
  }
  const isEd25519 = keyPair.privateKey.algorithm.name === 'Ed25519' || keyPair.privateKey.algorithm.name === 'EdDSA';
  return oidc.getDPoPHandle(
    config,
    keyPair,
    isEd25519
      ? {
          [oidc.modifyAssertion]: (header) => {
            header.alg = 'EdDSA';
          },
        }
      : {},
  );
}

/**
 * An http(s) URL. `localhost:3000/apigateway` parses (as the scheme `localhost:`) and would later read as "not on
 * https", even with allowInsecureRequests: the message names the missing scheme instead.
 */
function checkHttpUrl(name: string, value: string): void {
  if (typeof value !== 'string') throw new TypeError(`createNetAuthClient: ${name} must be an absolute URL`);
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url?.protocol === 'https:' || url?.protocol === 'http:') return;
  if (url === undefined || !value.includes('://')) {
    throw new TypeError(
      `createNetAuthClient: ${name} ${JSON.stringify(value)} has no scheme: write it with https:// ` +
        '(http:// with allowInsecureRequests, for development)',
    );
  }
  throw new TypeError(
    `createNetAuthClient: ${name} must be an https: URL (http: for development), not ${url.protocol}`,
  );
}

/** Checks the options at construction, so a configuration that cannot work fails at start-up, naming the fix. */
export function checkOptions(options: NetAuthClientOptions): void {
  if (typeof options.clientId !== 'string' || options.clientId === '')
    throw new TypeError('createNetAuthClient: clientId is required');
  if ((options.clientSecret === undefined) === (options.privateKey === undefined)) {
    throw new TypeError(
      'createNetAuthClient: give exactly one of clientSecret (client_secret_basic) and privateKey (private_key_jwt)',
    );
  }
  if (options.signedRequests && options.privateKey === undefined) {
    throw new TypeError(
      'createNetAuthClient: signedRequests needs privateKey (requests are signed with the client key)',
    );
  }
  const audience = options.assertionAudience;
  if (audience !== undefined && audience !== 'issuer' && audience !== 'endpoint') {
    throw new TypeError("createNetAuthClient: assertionAudience must be 'issuer' or 'endpoint'");
  }
  const margin = options.refreshBeforeExpiry;
  if (margin !== undefined && !(Number.isInteger(margin) && margin >= 0)) {
    throw new TypeError('createNetAuthClient: refreshBeforeExpiry must be a whole number of seconds, 0 or more');
  }
  const key = options.privateKey;
  if (key !== undefined && isJwk(key)) {
    checkPrivateJwk('privateKey', key);
  } else if (key !== undefined) {
    if (key.key?.type !== 'private')
      throw new TypeError('createNetAuthClient: privateKey.key must be a private CryptoKey');
    cryptoKeyAlgorithm(key.key);
  }
  const dpop = options.dpop;
  if (dpop !== undefined && typeof dpop !== 'boolean') {
    if (dpop === null || typeof dpop !== 'object' || !isJwk(dpop.privateKey))
      throw new TypeError('createNetAuthClient: dpop must be true, false or { privateKey: <private JWK> }');
    checkPrivateJwk('dpop.privateKey', dpop.privateKey);
  }
  for (const [name, value] of [
    ['redirectUri', options.redirectUri],
    ['discoveryUrl', options.discoveryUrl],
    ['gateway', typeof options.gateway === 'string' ? options.gateway : options.gateway.issuer],
  ] as const) {
    if (value !== undefined) checkHttpUrl(name, value);
  }
  if (options.discoveryUrl !== undefined && typeof options.gateway !== 'string') {
    throw new TypeError(
      'createNetAuthClient: discoveryUrl is for a discovered gateway; with explicit endpoints there is nothing to discover',
    );
  }
}

async function importSigner(key: ClientPrivateKey, options: NetAuthClientOptions): Promise<ClientSigner> {
  const signRequests = options.signedRequests === true;
  const audience = options.assertionAudience ?? CLIENT_DEFAULTS.assertionAudience;
  if (!isJwk(key)) return { key: key.key, kid: key.kid, alg: cryptoKeyAlgorithm(key.key), signRequests, audience };
  const alg = jwkAlgorithm(key);
  return { key: (await importJWK(key, alg)) as oidc.CryptoKey, kid: key.kid, alg, signRequests, audience };
}

/** A client assertion (RFC 7523 §2.2) for `aud`: `iss` = `sub` = client_id, 60 s of life, a random `jti`. */
export async function clientAssertion(signer: ClientSigner, clientId: string, aud: string): Promise<string> {
  // The gateway checks these against its own clock: the real time, not the injected one.
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: signer.alg, ...(signer.kid ? { kid: signer.kid } : {}) })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(aud)
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(iat + 60)
    .setJti(randomBytes(16).toString('base64url'))
    .sign(signer.key);
}

/**
 * The client authentication method the options describe. With `assertionAudience: 'endpoint'` the assertion
 * names the URL it is sent to, which openid-client does not hand to a ClientAuth: the form body is marked here
 * and the assertion signed in the gateway fetch, where the URL is known.
 */
function clientAuthentication(
  options: NetAuthClientOptions,
  signer: ClientSigner | undefined,
  unsigned: WeakMap<URLSearchParams, string>,
): oidc.ClientAuth {
  if (!signer) return oidc.ClientSecretBasic(options.clientSecret);
  if (signer.audience === 'endpoint') {
    return (_as, client, body) => {
      body.set('client_id', client.client_id);
      body.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
      unsigned.set(body, client.client_id);
    };
  }
  // openid-client names Ed25519 'Ed25519'; the gateways (docs/protocol.md, jose) know it as 'EdDSA'.
  return oidc.PrivateKeyJwt(
    { key: signer.key, ...(signer.kid ? { kid: signer.kid } : {}) },
    {
      [oidc.modifyAssertion]: (header) => {
        header.alg = signer.alg;
      },
    },
  );
}

/** The well-known URL openid-client asks for an issuer (OpenID Connect Discovery §4). */
function wellKnownOf(issuer: string): string {
  const url = new URL(issuer);
  url.pathname = `${url.pathname.replace(/\/$/, '')}/.well-known/openid-configuration`;
  return url.href;
}

/** The HTTP status of a discovery that was answered: in a JSON error, or the response openid-client refused. */
function statusOf(cause: unknown): number | undefined {
  if (cause instanceof oidc.ResponseBodyError) return cause.status;
  const inner = (cause as { cause?: unknown } | undefined)?.cause;
  return inner instanceof Response ? inner.status : undefined;
}

/**
 * A failed discovery. A 4xx (a 404 above all) says the metadata is not where the options point: `misconfigured`,
 * naming the URL and the status. No answer, or a 5xx, is the gateway's failure: `unavailable`, naming them too.
 */
function discoveryFailed(cause: unknown, url: string): NetAuthClientError {
  const error = fromOpenIdClientError(cause);
  if (error.kind === 'misconfigured' || error.kind === 'aborted') return error;
  const status = statusOf(cause);
  if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) {
    const fix = 'set the option gateway to the issuer, or discoveryUrl to where the gateway publishes its metadata';
    return new NetAuthClientError('misconfigured', `no gateway metadata at ${url}: HTTP ${status}; ${fix}`, { cause });
  }
  const answered = status === undefined ? 'no usable answer' : `HTTP ${status}`;
  const message = `could not discover the gateway metadata at ${url}: ${answered}`;
  return new NetAuthClientError('unavailable', message, { cause });
}

/**
 * The openid-client configuration, built once: discovered from the issuer (or `discoveryUrl`), or from
 * explicit endpoints. A failed discovery is not cached, so the next request tries again.
 */
export function createContext(options: NetAuthClientOptions): ClientContext {
  checkOptions(options);
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number, signal?: AbortSignal) => timer(ms, undefined, signal ? { signal } : {}));
  // Every request to the gateway goes through here: it marks the caller's probe, and sends the discovery
  // request for the issuer to `discoveryUrl` instead, so openid-client still checks the document's issuer.
  const redirected =
    typeof options.gateway === 'string' && options.discoveryUrl !== undefined
      ? { from: wellKnownOf(options.gateway), to: options.discoveryUrl }
      : undefined;
  // Form bodies whose client assertion is signed here, for the URL they are sent to (`assertionAudience: 'endpoint'`).
  const unsigned = new WeakMap<URLSearchParams, string>();
  let signer: ClientSigner | undefined;
  const gatewayFetch: oidc.CustomFetch = async (url, init) => {
    const clientId = init.body instanceof URLSearchParams ? unsigned.get(init.body) : undefined;
    if (clientId !== undefined && signer !== undefined && init.body instanceof URLSearchParams) {
      const endpoint = new URL(url);
      endpoint.search = '';
      endpoint.hash = '';
      init.body.set('client_assertion', await clientAssertion(signer, clientId, endpoint.href));
    }
    const probe = sent.getStore();
    if (probe) probe.sent = true;
    const caller = withSignal.getStore();
    const signal = caller && init.signal ? AbortSignal.any([caller, init.signal]) : (caller ?? init.signal);
    return fetch(redirected && url === redirected.from ? redirected.to : url, {
      ...(init as RequestInit),
      ...(signal ? { signal } : {}),
    });
  };
  const build = async () => {
    signer = options.privateKey === undefined ? undefined : await importSigner(options.privateKey, options);
    const auth = clientAuthentication(options, signer, unsigned);
    let config: oidc.Configuration;
    if (typeof options.gateway === 'string') {
      try {
        config = await oidc.discovery(new URL(options.gateway), options.clientId, undefined, auth, {
          [oidc.customFetch]: gatewayFetch,
          ...(options.allowInsecureRequests ? { execute: [oidc.allowInsecureRequests] } : {}),
        });
      } catch (cause) {
        if ((cause as { code?: unknown }).code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED') {
          throw new NetAuthClientError(
            'misconfigured',
            `the metadata at ${redirected?.to ?? wellKnownOf(options.gateway)} does not name ${options.gateway} as its issuer: set the option gateway to the issuer the gateway announces`,
            { cause },
          );
        }
        throw discoveryFailed(cause, redirected?.to ?? wellKnownOf(options.gateway));
      }
    } else {
      config = new oidc.Configuration({ ...options.gateway }, options.clientId, undefined, auth);
      config[oidc.customFetch] = gatewayFetch;
      if (options.allowInsecureRequests) oidc.allowInsecureRequests(config);
    }
    return { config, signer, dpop: await dpopHandle(config, options.dpop) };
  };
  let pending: ReturnType<typeof build> | undefined;
  return {
    options,
    now,
    sleep,
    load: () => {
      pending ??= build().catch((error: unknown) => {
        pending = undefined;
        throw error;
      });
      return pending;
    },
  };
}
