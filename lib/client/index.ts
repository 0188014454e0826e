import type { Request, RequestHandler } from 'express';
import type * as oidc from 'openid-client';
import type { CallbackOptions, NetAuthClientOptions, StartOptions } from './options.js';
import { configurationLoader } from './configuration.js';
import { startMiddleware } from './start.js';
import { callbackMiddleware } from './callback.js';
import { getToken, type TokenState } from './session.js';
import { serviceFetch } from './service-fetch.js';
import { runBackchannel, type BackchannelParams, type BackchannelToken } from './backchannel.js';

export interface NetAuthClient {
  /** Middleware that starts the frontend flow (302 to the gateway's /authorize). */
  start(options: StartOptions): RequestHandler;
  /** Middleware at the redirect URI: exchanges the code and keeps the token in the session. */
  callback(options?: CallbackOptions): RequestHandler;
  /** The session's token and whether it expired, or undefined. */
  token(req: Request): TokenState | undefined;
  /** fetch() with the session's bearer token; rejects with `no_token` / `token_expired`. */
  fetch(req: Request, input: string | URL, init?: RequestInit): Promise<Response>;
  /** Runs the backend flow (CIBA poll mode) and resolves with the token. */
  backchannel(params: BackchannelParams): Promise<BackchannelToken>;
  /** The underlying openid-client configuration, for anything else. */
  configuration(): Promise<oidc.Configuration>;
}

/** The application side of express-netauth (`express-netauth/client`). */
export function createNetAuthClient(options: NetAuthClientOptions): NetAuthClient {
  const config = configurationLoader(options);
  return {
    start: (start) => startMiddleware(options, config, start),
    callback: (callback = {}) => callbackMiddleware(options, config, callback),
    token: (req) => getToken(req),
    fetch: (req, input, init) => serviceFetch(req, input, init),
    backchannel: async (params) => runBackchannel(await config(), params),
    configuration: config,
  };
}

export { NetAuthClientError } from './errors.js';
export type { NetAuthClientErrorKind } from './errors.js';
export type { NetAuthClientOptions, StartOptions, CallbackOptions, GatewayEndpoints } from './options.js';
export type { SessionToken, TokenState } from './session.js';
export type { BackchannelParams, BackchannelToken } from './backchannel.js';
