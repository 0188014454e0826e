import type { Request, RequestHandler, Response } from 'express';
import * as oidc from 'openid-client';
import type { StartOptions } from '../options.js';
import { audienceFor, type ClientContext, type ClientSigner } from '../configuration.js';
import { fromOpenIdClientError } from '../errors.js';
import { checkRequestedScope } from '../requested-scope.js';
import { checkSessionCookie, promisify, sessionOf, type PendingAuthorization } from '../session.js';
import { middleware } from './async-handler.js';

function resolve<T>(value: T | ((req: Request) => T), req: Request): T {
  return typeof value === 'function' ? (value as (req: Request) => T)(req) : value;
}

// Pending flows a session may hold at once (tabs); the oldest are dropped beyond this.
const MAX_PENDING = 5;

/**
 * The /authorize URL. With signed requests: every parameter in a request object signed by the client's key
 * (JAR, RFC 9101, built by openid-client), and the four the CAMARA profile requires in the plain too.
 */
async function authorizationUrl(
  config: oidc.Configuration,
  signer: ClientSigner | undefined,
  params: Record<string, string>,
): Promise<URL> {
  if (!signer?.signRequests) return oidc.buildAuthorizationUrl(config, params);
  const url = await oidc.buildAuthorizationUrlWithJAR(
    config,
    params,
    { key: signer.key, ...(signer.kid ? { kid: signer.kid } : {}) },
    {
      [oidc.modifyAssertion]: (header, payload) => {
        header.alg = signer.alg;
        payload.aud = audienceFor(config, signer, 'authorization_endpoint');
      },
    },
  );
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', params.scope!);
  url.searchParams.set('redirect_uri', params.redirect_uri!);
  return url;
}

/**
 * Starts the frontend flow: a fresh state (CSRF protection), PKCE S256 and, with `openid`, a nonce, all kept
 * in the server-side session; then a 302 to the gateway's /authorize.
 */
export async function beginAuthorization(
  ctx: ClientContext,
  req: Request,
  res: Response,
  start: StartOptions,
  required = false,
): Promise<void> {
  const redirectUri = ctx.options.redirectUri!;
  const session = sessionOf(req);
  checkSessionCookie(req, session);
  const scope = resolve(start.scope, req);
  const loginHint = start.login_hint === undefined ? undefined : resolve(start.login_hint, req);
  const data = start.data === undefined ? undefined : resolve(start.data, req);
  const requested = start.returnTo === undefined ? undefined : resolve(start.returnTo, req);
  // Only same-origin paths: a returnTo taken from the request must not make the app an open redirector.
  const returnTo = requested !== undefined && /^\/(?![/\\])/.test(requested) ? requested : undefined;
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const random = oidc.randomState();
  const state =
    start.dataIn === 'url' && data !== undefined
      ? `${random}.${Buffer.from(JSON.stringify(data)).toString('base64url')}`
      : random;
  const nonce = scope.split(' ').includes('openid') ? oidc.randomNonce() : undefined;

  const params: Record<string, string> = {
    redirect_uri: redirectUri,
    scope,
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  };
  if (loginHint) params.login_hint = loginHint;
  if (nonce) params.nonce = nonce;
  const prompt = start.prompt === undefined ? undefined : resolve(start.prompt, req);
  if (prompt) params.prompt = prompt;
  let url: URL;
  try {
    const { config, signer } = await ctx.load();
    checkRequestedScope(config, scope);
    url = await authorizationUrl(config, signer, params);
  } catch (cause) {
    throw fromOpenIdClientError(cause);
  }

  const pending: PendingAuthorization = {
    state,
    code_verifier: codeVerifier,
    nonce,
    scope,
    data,
    returnTo,
    ...(required ? { required } : {}),
  };
  const all = { ...(session.netauth?.pending ?? {}), [state]: pending };
  const keys = Object.keys(all);
  for (const key of keys.slice(0, Math.max(0, keys.length - MAX_PENDING))) delete all[key];
  session.netauth = { ...session.netauth, pending: all };
  await promisify((cb) => session.save(cb));
  res.redirect(302, url.href);
}

export function startMiddleware(ctx: ClientContext, start: StartOptions): RequestHandler {
  if (!ctx.options.redirectUri) throw new TypeError('start() needs the client option redirectUri');
  return middleware((req, res) => beginAuthorization(ctx, req, res, start));
}
