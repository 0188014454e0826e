import type { Request } from 'express';

/** The gateway's endpoints, when not discovered. */
export interface GatewayEndpoints {
  issuer: string;
  authorization_endpoint?: string;
  token_endpoint: string;
  backchannel_authentication_endpoint?: string;
}

export interface NetAuthClientOptions {
  /**
   * The gateway: its issuer URL (metadata is discovered from `{issuer}/.well-known/openid-configuration`),
   * or its endpoints.
   */
  gateway: string | GatewayEndpoints;
  clientId: string;
  clientSecret: string;
  /**
   * The redirect URI registered for this application, absolute. The callback uses it as given, never the
   * request's Host or protocol, so it works behind TLS-terminating proxies.
   */
  redirectUri?: string;
  /** Allow `http:` gateways (development only). */
  allowInsecureRequests?: boolean;
  /** Where the callback sends the browser after storing the token, unless `start` named a `returnTo`. Default: `next()`. */
  successRedirect?: string;
}

type PerRequest<T> = T | ((req: Request) => T);

export interface StartOptions {
  /** `dpv:<Purpose>#<scope>` (or the CAMARA form). */
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

export interface CallbackOptions {
  /** Overrides the client's `successRedirect` for this callback. */
  successRedirect?: string;
}
