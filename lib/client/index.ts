/**
 * The application side: middleware for the frontend flow and helpers for the backend flow, on openid-client.
 *
 * @packageDocumentation
 * @module express-netauth/client
 */
import type { Request, RequestHandler } from 'express';
import type * as oidc from 'openid-client';
import type {
  CallbackOptions,
  LogoutOptions,
  NetAuthClientOptions,
  RequireTokenOptions,
  StartOptions,
} from './options.js';
import { createContext } from './configuration.js';
import { startMiddleware } from './middleware/start.js';
import { callbackMiddleware } from './middleware/callback.js';
import { requireTokenMiddleware } from './middleware/require-token.js';
import { logoutMiddleware, revokeToken } from './middleware/logout.js';
import { getToken, type TokenState } from './session.js';
import { refreshBackchannelToken, serviceFetch, type ServiceToken } from './refresh.js';
import { clientCredentials, jwtBearer, type ClientCredentialsParams, type JwtBearerParams } from './grants.js';
import {
  pollBackchannel,
  resumeBackchannel,
  runBackchannel,
  startBackchannel,
  type BackchannelParams,
  type BackchannelPoll,
  type BackchannelToken,
  type PendingBackchannel,
} from './backchannel.js';

export interface NetAuthClient {
  /** Middleware that starts the frontend flow (302 to the gateway's /authorize). */
  start(options: StartOptions): RequestHandler;
  /** Middleware at the redirect URI: exchanges the code and keeps the token in the session. */
  callback(options?: CallbackOptions): RequestHandler;
  /**
   * Middleware for the application's own routes: `next()` with a live session token covering `scope`, else
   * the frontend flow, coming back to this URL (GET/HEAD; other methods: `no_token` / `token_expired`).
   */
  requireToken(options: RequireTokenOptions): RequestHandler;
  /** Middleware: revokes the session's tokens at the gateway (RFC 7009) and clears the session. */
  logout(options?: LogoutOptions): RequestHandler;
  /** The session's token and whether it expired, or undefined. */
  token(req: Request): TokenState | undefined;
  /**
   * fetch() to a service API with the session's token (`from` is the request: refreshed first when it is about
   * to expire and the session holds a refresh token; rejects with `no_token` / `token_expired`) or with a token
   * given (the backend flow's): as Bearer, or with a DPoP proof when the token is DPoP-bound (the `dpop` option).
   */
  fetch(from: Request | ServiceToken, input: string | URL, init?: RequestInit): Promise<Response>;
  /**
   * The next token of a backend-flow token that has a `refresh_token` (RFC 6749 §6), with the rotated refresh
   * token: keep it in place of the old one. `token_expired` when the gateway refuses: start a new flow.
   */
  refresh(token: BackchannelToken): Promise<BackchannelToken>;
  /** Revokes a token (e.g. a backend-flow token) at the gateway's revocation endpoint (RFC 7009). */
  revoke(token: string, hint?: 'access_token' | 'refresh_token'): Promise<void>;
  /** Runs the backend flow (CIBA poll mode) and resolves with the token; `onProgress` reports each step. */
  backchannel(params: BackchannelParams): Promise<BackchannelToken>;
  /** The backend flow in two steps, for job queues: step 1, bc-authorize. */
  startBackchannel(params: Omit<BackchannelParams, 'onProgress'>): Promise<PendingBackchannel>;
  /** Step 2, once: one poll, now (the caller waits `retry_after` between polls). Works in any process. */
  pollBackchannel(request: PendingBackchannel): Promise<BackchannelPoll>;
  /** Step 2, until decided: polls at the interval. Works in any process. */
  resumeBackchannel(
    request: PendingBackchannel,
    options?: Pick<BackchannelParams, 'signal' | 'onProgress'>,
  ): Promise<BackchannelToken>;
  /**
   * A two-legged token (`client_credentials`, RFC 6749 §4.4) for APIs that process no personal data; no refresh
   * token. With the client's authentication and DPoP key, as the other flows.
   */
  clientCredentials(params: ClientCredentialsParams): Promise<BackchannelToken>;
  /**
   * A token for a subscriber the backend already knows (the JWT bearer grant, RFC 7523 §2.1): an assertion signed
   * with `privateKey` names the subscriber (`sub`) and the `scope`; no refresh token.
   */
  jwtBearer(params: JwtBearerParams): Promise<BackchannelToken>;
  /** The underlying openid-client configuration, for anything else. */
  configuration(): Promise<oidc.Configuration>;
}

/**
 * The application side of express-netauth (`express-netauth/client`). Options that cannot work throw here,
 * at start-up; the gateway's metadata is discovered at the first use.
 */
export function createNetAuthClient(options: NetAuthClientOptions): NetAuthClient {
  const ctx = createContext(options);
  return {
    start: (start) => startMiddleware(ctx, start),
    callback: (callback = {}) => callbackMiddleware(ctx, callback),
    requireToken: (required) => requireTokenMiddleware(ctx, required),
    logout: (logout = {}) => logoutMiddleware(ctx, logout),
    token: (req) => getToken(req, ctx.now()),
    fetch: (from, input, init) => serviceFetch(ctx, from, input, init),
    refresh: (token) => refreshBackchannelToken(ctx, token),
    revoke: (token, hint) => revokeToken(ctx, token, hint),
    backchannel: (params) => runBackchannel(ctx, params),
    startBackchannel: (params) => startBackchannel(ctx, params),
    pollBackchannel: (request) => pollBackchannel(ctx, request),
    resumeBackchannel: (request, resume) => resumeBackchannel(ctx, request, resume),
    clientCredentials: (params) => clientCredentials(ctx, params),
    jwtBearer: (params) => jwtBearer(ctx, params),
    configuration: async () => (await ctx.load()).config,
  };
}

export { NetAuthClientError } from './errors.js';
export type { NetAuthClientErrorCode, NetAuthClientErrorKind } from './errors.js';
export type {
  NetAuthClientOptions,
  StartOptions,
  CallbackOptions,
  RequireTokenOptions,
  LogoutOptions,
  GatewayEndpoints,
  ClientPrivateKey,
  PerRequest,
} from './options.js';
export type { SessionToken, TokenState } from './session.js';
export type { ServiceToken } from './refresh.js';
export type { ClientCredentialsParams, JwtBearerParams } from './grants.js';
export type {
  BackchannelParams,
  BackchannelPoll,
  BackchannelProgress,
  BackchannelToken,
  PendingBackchannel,
} from './backchannel.js';
