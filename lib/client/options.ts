import type { Request } from 'express';
import type { JWK } from 'jose';
import type * as oidc from 'openid-client';

/** The gateway's endpoints, when not discovered. */
export interface GatewayEndpoints {
  issuer: string;
  authorization_endpoint?: string;
  token_endpoint: string;
  backchannel_authentication_endpoint?: string;
  revocation_endpoint?: string;
  /** RFC 9207: the gateway puts `iss` in every authorization response; the callback then requires it. */
  authorization_response_iss_parameter_supported?: boolean;
}

/** The application's private signing key: a private JWK (with the `kid` registered at the gateway), or a CryptoKey. */
/** A private JWK, or a CryptoKey with the `kid` registered for its public half. */
export type ClientPrivateKey =
  | JWK
  | {
      /** The private key. */
      key: oidc.CryptoKey;
      /** The key id registered at the gateway. */
      kid?: string;
    };

export interface NetAuthClientOptions {
  /**
   * The gateway: its issuer identifier (metadata is discovered from `{issuer}/.well-known/openid-configuration`,
   * or from `discoveryUrl`), or its endpoints.
   */
  gateway: string | GatewayEndpoints;
  /**
   * Where the gateway's metadata document is, when not at `{issuer}/.well-known/openid-configuration`: the
   * RFC 8414 form (`https://host/.well-known/oauth-authorization-server/apigateway`) or an API manager's URL.
   * The document must still name `gateway` as its `issuer` (RFC 8414 §3.3), or nothing is sent.
   * @see {@link https://www.rfc-editor.org/rfc/rfc8414#section-3 | RFC 8414 §3}
   */
  discoveryUrl?: string;
  /** The `client_id` the gateway's developer portal registered for the application. */
  clientId: string;
  /** `client_secret_basic` (the seed's method): the secret registered for the application. */
  clientSecret?: string;
  /**
   * `private_key_jwt` (RFC 7523, the CAMARA profile's MUST): the application's private key. Give this or
   * `clientSecret`. The algorithm is the JWK's `alg`, else RS256 (RSA), ES256 / ES384 (EC) or EdDSA (Ed25519).
   * @see {@link https://www.rfc-editor.org/rfc/rfc7523#section-2.2 | RFC 7523 §2.2}
   */
  privateKey?: ClientPrivateKey;
  /**
   * Sign the authorization requests with `privateKey`: JAR (RFC 9101) at /authorize and a signed `request`
   * at bc-authorize (CIBA Core §7.1.1), as the CAMARA profile recommends.
   * @defaultValue false
   * @see {@link https://www.rfc-editor.org/rfc/rfc9101 | RFC 9101}
   */
  signedRequests?: boolean;
  /**
   * What the JWTs signed with `privateKey` name as `aud`: client assertions, request objects and JWT-bearer
   * assertions. `'issuer'` (the default): the issuer, which every CAMARA gateway must accept (and the OpenID
   * Foundation's 2025 advisory on `private_key_jwt` recommends); `'endpoint'`: the URL of the endpoint each is
   * sent to, as the CAMARA profile's SHOULD reads.
   * @see {@link https://www.rfc-editor.org/rfc/rfc7523#section-3 | RFC 7523 §3} (`aud`)
   * @defaultValue `'issuer'`
   */
  assertionAudience?: 'issuer' | 'endpoint';
  /**
   * The redirect URI registered for this application, absolute. The callback uses it as given, never the
   * request's Host or protocol, so it works behind TLS-terminating proxies.
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.1.2 | RFC 6749 §3.1.2}
   */
  redirectUri?: string;
  /**
   * DPoP (RFC 9449): hold a key and prove possession of it on every token request (the gateway then binds the
   * tokens to it: `token_type` DPoP) and on every service-API call through `fetch`. `true`: a fresh ES256 key per
   * process (tokens kept in a shared session store then work only on the instance that obtained them, and not
   * after a restart); `{ privateKey }`: a private JWK of your own (EC P-256 / P-384, RSA, Ed25519), the same on
   * every instance.
   * @defaultValue false
   * @see {@link https://www.rfc-editor.org/rfc/rfc9449 | RFC 9449}
   */
  dpop?:
    | boolean
    | {
        /** A private JWK (EC P-256 / P-384, RSA, Ed25519), the same on every instance. */
        privateKey: JWK;
      };
  /** Allow `http:` gateways (development only). */
  allowInsecureRequests?: boolean;
  /**
   * Where the callback sends the browser after storing the token, unless `start` named a `returnTo`.
   * @defaultValue `next()`
   */
  successRedirect?: string;
  /**
   * Seconds before its expiry at which the session's token is refreshed, when the session holds a refresh token
   * (`offline_access`): by `requireToken()` and `fetch()`.
   * @defaultValue 30
   * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-6 | RFC 6749 §6}
   */
  refreshBeforeExpiry?: number;
  /**
   * The clock, epoch ms (tests).
   * @defaultValue `Date.now`
   */
  now?: () => number;
  /**
   * The wait between backend-flow polls (`backchannel()`, `resumeBackchannel()`): resolves after `ms`, rejects
   * when `signal` fires. For tests, with `now`: advance the clock instead of waiting.
   * @defaultValue a timer
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** A value, or a function of the request that gives it. */
export type PerRequest<T> = T | ((req: Request) => T);

export interface StartOptions {
  /** `dpv:<Purpose> <scope>…` (CAMARA) or `dpv:<Purpose>#<scope>`. */
  scope: PerRequest<string>;
  /** `tel:+…` or `ipport:…`; undefined to rely on network identification alone. */
  login_hint?: PerRequest<string | undefined>;
  /**
   * Application data to have back with the token (the seed's use of `state`, e.g. the phone number the
   * backend needs for the service API). Kept in the server-side session, never in the URL…
   */
  data?: PerRequest<Record<string, unknown> | undefined>;
  /** …unless this is `'url'`: then it also travels in `state` (signed by nothing: do not put secrets there). */
  dataIn?: 'session' | 'url';
  /** Path to send the browser to after the callback. */
  returnTo?: PerRequest<string | undefined>;
  /**
   * `none`: never show the consent page (fail with kind `consent_required` instead);
   * `consent`: ask the subscriber again even when consent is on record.
   */
  prompt?: PerRequest<'none' | 'consent' | undefined>;
}

/** `requireToken()`: the flow it starts comes back to the route that asked, so there is no `returnTo`. */
export type RequireTokenOptions = Omit<StartOptions, 'returnTo'>;

export interface CallbackOptions {
  /** Overrides the client's `successRedirect` for this callback. */
  successRedirect?: string;
}

export interface LogoutOptions {
  /**
   * Where to send the browser once the session is cleared.
   * @defaultValue `next()`
   */
  successRedirect?: string;
}
