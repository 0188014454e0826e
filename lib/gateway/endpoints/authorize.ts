import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import { parseLoginHint, type LoginHint } from '../../identity/login-hint.js';
import { findByLoginHint, type Subscriber, type SubscriberDirectory } from '../../identity/subscribers.js';
import type { NetworkIdentifier } from '../../identity/network.js';
import type { ClientRegistry, RegisteredClient } from '../../registry/clients.js';
import type { Consents } from '../consents.js';
import {
  checkIdentification,
  checkOpenidForClaims,
  decideScope,
  storedAuthorization,
  type ScopeDeciding,
} from '../requests/authorization.js';
import { identificationOfHint, type SubscriberIdentification } from '../../identity/identification.js';
import type { FormParams } from '../http/form.js';
import type { RequestContext } from '../http/request-context.js';
import { sendAuthorizationResponse, type RedirectTarget } from '../http/respond.js';
import { createAuthorizationCode, S256_CHALLENGE, type CodeIssuing } from '../requests/authorization-codes.js';
import { requestParameters, type RequestObjectReading } from '../requests/request-objects.js';
import { sandboxRefusal, type Sandbox } from '../requests/sandbox.js';
import type { ConsentPage } from './consent-page.js';
import { overLimit, type RateLimits } from '../../ops/rate-limits.js';

/**
 * What /authorize uses: the registry, the directory and the network that identify the subscriber, the address
 * limit, the consents it reads, and what reading a request, deciding its scope and issuing a code use.
 */
export interface AuthorizeCollaborators extends RequestObjectReading, ScopeDeciding, CodeIssuing, Sandbox {
  clients: ClientRegistry;
  subscribers: SubscriberDirectory;
  network: NetworkIdentifier | undefined;
  limits: RateLimits | undefined;
  consent: Consents;
}

const NOT_IDENTIFIED = 'subscriber not identified by the mobile network';
const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

/** Protocol step 1: client and redirect_uri. Failures here are an error page, never a redirect (no open redirector). */
async function registeredTarget(
  ctx: Pick<AuthorizeCollaborators, 'clients'>,
  params: FormParams,
): Promise<{ client: RegisteredClient; redirectUri: string }> {
  const clientId = params.get('client_id');
  if (clientId === undefined) throw new OAuthError('invalid_request', 'client_id is required');
  const client = await ctx.clients.find(clientId);
  if (!client) throw new OAuthError('invalid_request', 'unknown client_id');
  const redirectUri = params.get('redirect_uri');
  if (redirectUri === undefined) throw new OAuthError('invalid_request', 'redirect_uri is required');
  // Exact string comparison (RFC 9700 §4.1.3): no prefix, pattern or normalisation.
  if (!(client.redirectUris ?? []).includes(redirectUri)) {
    throw new OAuthError('invalid_request', 'redirect_uri is not registered for this client');
  }
  return { client, redirectUri };
}

/** RFC 7636, S256 only: `plain` (or a challenge without a method, which means plain) is refused. */
function pkce(client: RegisteredClient, params: FormParams): string | undefined {
  const challenge = params.get('code_challenge');
  const method = params.get('code_challenge_method');
  if (challenge === undefined) {
    if (method !== undefined) throw new OAuthError('invalid_request', 'code_challenge_method without code_challenge');
    if (client.requirePkce)
      throw new OAuthError('invalid_request', 'PKCE (code_challenge with S256) is required for this client');
    return undefined;
  }
  if (method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
  if (!S256_CHALLENGE.test(challenge))
    throw new OAuthError('invalid_request', 'code_challenge is not a base64url SHA-256 value');
  return challenge;
}

function prompts(params: FormParams): Set<string> {
  const value = params.get('prompt');
  const set = new Set((value ?? '').split(' ').filter((p) => p !== ''));
  for (const p of set) if (!PROMPTS.has(p)) throw new OAuthError('invalid_request', `unsupported prompt value "${p}"`);
  if (set.has('none') && set.size > 1)
    throw new OAuthError('invalid_request', 'prompt=none cannot be combined with other values');
  return set;
}

/**
 * The login_hint, where it can be used. With network identification, one the server cannot use (a type not served,
 * such as `msisdn:`, or malformed) is ignored, as the CAMARA profile recommends: the network identifies the
 * subscriber anyway. In sandbox mode the hint is the identification: there it stays an error.
 */
function hint(ctx: Sandbox, params: FormParams): LoginHint | undefined {
  const value = params.get('login_hint');
  if (value === undefined) return undefined;
  try {
    return parseLoginHint(value);
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    if (!ctx.sandboxLines) return undefined;
    // A well-formed hint of a type not served cannot name the subscriber: access_denied, as any other mismatch.
    if (error.code === 'unknown_user_id') {
      throw new OAuthError('access_denied', 'login_hint does not name the subscriber');
    }
    throw error;
  }
}

/** Does the hint name this subscriber? The device's own address always does; otherwise ask the directory. */
async function hintNames(
  ctx: Pick<AuthorizeCollaborators, 'subscribers'>,
  loginHint: LoginHint,
  subscriber: Subscriber,
  device: { ip: string; port?: number },
): Promise<boolean> {
  if (
    loginHint.type === 'ipport' &&
    loginHint.address.ip === device.ip &&
    (loginHint.address.port === undefined || loginHint.address.port === device.port)
  ) {
    return true;
  }
  const named = await findByLoginHint(ctx.subscribers, loginHint);
  return named !== undefined && named.id === subscriber.id;
}

/** Protocol steps 3 and 4: the subscriber behind the device (or, in sandbox mode, behind the allow-listed hint). */
async function identify(
  ctx: Pick<AuthorizeCollaborators, 'sandboxLines' | 'subscribers' | 'network'>,
  req: Request,
  loginHint: LoginHint | undefined,
  silent: boolean,
): Promise<Subscriber> {
  if (ctx.sandboxLines) {
    const refusal = sandboxRefusal(ctx, loginHint);
    if (refusal !== undefined || loginHint === undefined) throw new OAuthError('access_denied', refusal);
    const subscriber = await findByLoginHint(ctx.subscribers, loginHint);
    if (!subscriber) throw new OAuthError('access_denied', 'no subscriber is known by this login_hint');
    return subscriber;
  }
  const result = ctx.network ? await ctx.network.identify(req, ctx.subscribers) : undefined;
  if (!result?.identified) {
    // With prompt=none the answer is OIDC's login_required; there is no login page that could help either way.
    throw new OAuthError(silent ? 'login_required' : 'access_denied', NOT_IDENTIFIED);
  }
  if (loginHint && !(await hintNames(ctx, loginHint, result.subscriber, result.address))) {
    throw new OAuthError('access_denied', 'login_hint names another subscriber than the one on this connection');
  }
  return result.subscriber;
}

/**
 * GET /authorize: the OIDC authorization code flow for a subscriber identified by the mobile network,
 * in docs/protocol.md's order. Once client and redirect_uri are known good, every error is a redirect.
 */
export function authorizeEndpoint(ctx: AuthorizeCollaborators, consentPage: ConsentPage) {
  return async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    const plain = request.params;
    // Counted while the client is looked up; answered once it is known where errors go.
    const limited = ctx.limits?.authorize(ctx.network?.countedDevice(req) ?? { ip: req.ip });
    let registered: Awaited<ReturnType<typeof registeredTarget>>;
    try {
      registered = await registeredTarget(ctx, plain);
    } catch (error) {
      // No redirect target: over the limit, the error page says so (429), else the request's own error.
      const retryAfter = await limited;
      if (retryAfter !== undefined)
        throw overLimit(ctx.events, { endpoint: 'authorize', limit: 'address', retryAfter });
      throw error;
    }
    const { client, redirectUri } = registered;
    const target: RedirectTarget = { redirectUri, state: undefined, status: 302 };
    request.redirectTarget = target;
    // A state sent twice is invalid_request, answered without a state (none is ever invented). With a request
    // object (or request_uri) only a verified signed state is ever echoed: the plain parameters are not used.
    const objectSent = plain.has('request') || plain.has('request_uri');
    if (!objectSent) target.state = plain.get('state');
    // Protocol.md, frontend step 2: from here the limit's temporarily_unavailable goes back to the application.
    const retryAfter = await limited;
    if (retryAfter !== undefined)
      throw overLimit(ctx.events, { endpoint: 'authorize', limit: 'address', clientId: client.clientId, retryAfter });

    // RFC 9101: from here, a verified request object's parameters only; redirect_uri is the plain one, which it equals.
    const { params, signed } = await requestParameters(ctx, client, plain, 'authorize');
    if (signed) target.state = params.get('state');
    const responseType = params.require('response_type');
    if (responseType !== 'code') throw new OAuthError('unsupported_response_type', 'response_type must be code');
    const responseMode = params.get('response_mode');
    if (responseMode !== undefined && responseMode !== 'query')
      throw new OAuthError('invalid_request', 'response_mode must be query');
    if (!client.grantTypes.includes('authorization_code')) {
      throw new OAuthError('unauthorized_client', 'the client is not registered for the authorization code grant');
    }
    const scope = params.require('scope');
    checkOpenidForClaims(scope, params.get('claims'));
    const decision = decideScope(ctx, client, scope);
    if (decision.basis === 'forbidden')
      throw new OAuthError('access_denied', 'the policy forbids this purpose and scope');
    const codeChallenge = pkce(client, params);
    const prompt = prompts(params);
    const nonce = params.get('nonce');
    const loginHint = hint(ctx, params);
    // The network identifies the device (a hint only has to agree with it); in sandbox mode the hint names the line.
    let identifiedBy: SubscriberIdentification = 'network';
    if (ctx.sandboxLines && loginHint) identifiedBy = identificationOfHint(loginHint);
    checkIdentification(decision, identifiedBy, 'access_denied');

    const subscriber = await identify(ctx, req, loginHint, prompt.has('none'));
    // Before any consent is read: a revocation of this subscriber or client from now on ends what begins here.
    const authorizedAt = ctx.now();

    let consentGrants: string[] = [];
    let ask = false;
    if (decision.consentScopes.length > 0) {
      const consent = await ctx.consent.state({
        clientId: client.clientId,
        subscriberId: subscriber.id,
        purpose: decision.requested.purpose,
        scopes: decision.consentScopes,
      });
      ask = consent.state !== 'granted' || prompt.has('consent');
      if (consent.state === 'granted') consentGrants = consent.grantIds;
    }
    ctx.events.emit('authorization.requested', {
      clientId: client.clientId,
      subscriberId: subscriber.id,
      purpose: decision.requested.purpose,
      scopes: decision.requested.scopes,
      identifiedBy,
      consentPage: ask && !prompt.has('none'),
    });
    if (ask && prompt.has('none'))
      throw new OAuthError('consent_required', 'the subscriber has not consented to this purpose and scope');
    if (ask) {
      await consentPage.start(req, res, {
        ...storedAuthorization(client.clientId, subscriber, decision.requested, identifiedBy, authorizedAt),
        clientName: client.name ?? client.clientId,
        redirectUri,
        state: target.state ?? null,
        consentScopes: decision.consentScopes,
        codeChallenge: codeChallenge ?? null,
        nonce: nonce ?? null,
      });
      return;
    }

    const code = await createAuthorizationCode(ctx, {
      ...storedAuthorization(client.clientId, subscriber, decision.requested, identifiedBy, authorizedAt),
      redirectUri,
      codeChallenge: codeChallenge ?? null,
      nonce: nonce ?? null,
      consentGrants,
    });
    sendAuthorizationResponse(res, ctx.issuer, target, { code });
  };
}
