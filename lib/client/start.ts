import type { Request, RequestHandler } from 'express';
import * as oidc from 'openid-client';
import type { NetAuthClientOptions, StartOptions } from './options.js';
import { checkSessionCookie, promisify, sessionOf, type PendingAuthorization } from './session.js';
import { middleware } from './middleware.js';

function resolve<T>(value: T | ((req: Request) => T), req: Request): T {
  return typeof value === 'function' ? (value as (req: Request) => T)(req) : value;
}

// Pending flows a session may hold at once (tabs); the oldest are dropped beyond this.
const MAX_PENDING = 5;

/**
 * Starts the frontend flow: a fresh state (CSRF protection), PKCE S256 and, with `openid`, a nonce, all kept
 * in the server-side session; then a 302 to the gateway's /authorize.
 */
export function startMiddleware(options: NetAuthClientOptions, config: () => Promise<oidc.Configuration>, start: StartOptions): RequestHandler {
  if (!options.redirectUri) throw new TypeError('start() needs the client option redirectUri');
  const redirectUri = options.redirectUri;
  return middleware(async (req, res) => {
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
    const state = start.dataIn === 'url' && data !== undefined ? `${random}.${Buffer.from(JSON.stringify(data)).toString('base64url')}` : random;
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
    const url = oidc.buildAuthorizationUrl(await config(), params);

    const pending: PendingAuthorization = { state, code_verifier: codeVerifier, nonce, scope, data, returnTo };
    const all = { ...(session.netauth?.pending ?? {}), [state]: pending };
    const keys = Object.keys(all);
    for (const key of keys.slice(0, Math.max(0, keys.length - MAX_PENDING))) delete all[key];
    session.netauth = { ...session.netauth, pending: all };
    await promisify((cb) => session.save(cb));
    res.redirect(302, url.href);
  });
}
