import type { Request, Response } from 'express';
import { OAuthError } from '../../errors.js';
import { parseLoginHint } from '../../identity/login-hint.js';
import { findByLoginHint, type SubscriberDirectory } from '../../identity/subscribers.js';
import { CIBA_GRANT } from '../../registry/clients.js';
import type { ClientAuthenticator } from '../client-auth/authenticator.js';
import type { Consents } from '../consents.js';
import {
  checkIdentification,
  checkOpenidForClaims,
  decideScope,
  type ScopeDeciding,
} from '../requests/authorization.js';
import { identificationOfHint } from '../../identity/identification.js';
import { requestParameters, type RequestObjectReading } from '../requests/request-objects.js';
import type { RequestContext } from '../http/request-context.js';
import { sandboxRefusal, type Sandbox } from '../requests/sandbox.js';
import { limitSubscriber, type SubscriberLimits } from '../requests/subscriber-limit.js';
import {
  createBackchannelRequest,
  decideBackchannelRequest,
  forgetBackchannelRequest,
  toHookRequest,
  type BackchannelKeeping,
} from '../requests/backchannel-requests.js';
import { overLimit } from '../../ops/rate-limits.js';
import { sendJson } from '../http/respond.js';
import { claimConsentNotification } from '../requests/consent-notifications.js';

/**
 * What /bc-authorize uses: the directory, the consents it asks about, where a failed hook goes, and what reading a
 * request, deciding its scope, the limits, the sandbox and keeping CIBA requests use.
 */
export interface BackchannelAuthorizeCollaborators
  extends RequestObjectReading,
    ScopeDeciding,
    Sandbox,
    SubscriberLimits,
    BackchannelKeeping {
  subscribers: SubscriberDirectory;
  consent: Consents;
  onError: (error: unknown) => void;
}

/**
 * POST /bc-authorize: CIBA poll mode. Answers 200 with an auth_req_id whether or not consent is on record,
 * so the answer never reveals a subscriber's consent (CAMARA privacy model); the token endpoint waits.
 */
export function bcAuthorize(ctx: BackchannelAuthorizeCollaborators, auth: ClientAuthenticator) {
  return async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    const body = request.params;
    const { client } = await auth.authenticate(req, res, body, 'bc-authorize');
    request.client = client;
    const limits = ctx.limits;
    if (limits) {
      const retryAfter = await limits.client('bc-authorize', client.clientId);
      if (retryAfter !== undefined)
        throw overLimit(ctx.events, {
          endpoint: 'bc-authorize',
          limit: 'client',
          clientId: client.clientId,
          retryAfter,
        });
    }
    if (!client.grantTypes.includes(CIBA_GRANT)) {
      throw new OAuthError('unauthorized_client', 'the client is not registered for the CIBA grant');
    }
    // CIBA Core §7.1.1: with a signed request, only its parameters count (acr_values, binding_message,
    // user_code and requested_expiry are ignored either way, as the CAMARA profile asks).
    const { params } = await requestParameters(ctx, client, body, 'bc-authorize');
    if (params.has('login_hint_token') || params.has('id_token_hint')) {
      throw new OAuthError('invalid_request', 'only login_hint identifies the subscriber here');
    }
    const loginHint = params.require('login_hint');
    const scope = params.require('scope');
    const hint = parseLoginHint(loginHint);
    checkOpenidForClaims(scope, params.get('claims'));
    const decision = decideScope(ctx, client, scope);
    if (decision.basis === 'forbidden')
      throw new OAuthError('access_denied', 'the policy forbids this purpose and scope');
    // Before the lookup: the answer says nothing of whether the hint names anyone.
    const identifiedBy = identificationOfHint(hint);
    checkIdentification(decision, identifiedBy, 'access_denied');
    const refusal = sandboxRefusal(ctx, hint);
    if (refusal !== undefined) throw new OAuthError('access_denied', refusal);
    const subscriber = await findByLoginHint(ctx.subscribers, hint);
    if (!subscriber) throw new OAuthError('unknown_user_id', 'no subscriber is known by this login_hint');
    // Protects the subscriber from floods of requests (and of consent notifications): each client's, and all together.
    // Counted while the request is written, in one round trip: a refused request's record is deleted before the
    // 429, its auth_req_id never sent and no hook run, so the subscriber sees nothing of it.
    const [limited, created] = await Promise.allSettled([
      limitSubscriber(ctx, 'bc-authorize', client.clientId, subscriber.id),
      createBackchannelRequest(ctx, client, subscriber, decision, identifiedBy),
    ]);
    if (limited.status === 'rejected') {
      if (created.status === 'fulfilled')
        await forgetBackchannelRequest(ctx, created.value.authReqId).catch(ctx.onError);
      throw limited.reason;
    }
    if (created.status === 'rejected') throw created.reason;
    const { authReqId, record } = created.value;
    sendJson(res, 200, {
      auth_req_id: authReqId,
      expires_in: ctx.lifetimes.authReqId,
      interval: ctx.lifetimes.pollInterval,
    });
    ctx.events.emit('ciba.requested', {
      clientId: client.clientId,
      subscriberId: subscriber.id,
      purpose: record.purpose,
      scopes: record.scopes,
      identifiedBy,
    });

    // After the answer: hooks run asynchronously and never delay or fail the response.
    const { authorize, onConsentRequired } = ctx.backchannel;
    if (!authorize && !onConsentRequired) return;
    const hookRequest = toHookRequest(authReqId, record, client);
    if (authorize) {
      authorize(hookRequest)
        .then((outcome) => decideBackchannelRequest(ctx, authReqId, outcome === 'approve' ? 'approved' : 'denied'))
        .catch(ctx.onError);
    }
    if (onConsentRequired && decision.consentScopes.length > 0) {
      ctx.consent
        .state({
          clientId: client.clientId,
          subscriberId: subscriber.id,
          purpose: record.purpose,
          scopes: record.consentScopes,
        })
        .then(async (state) => {
          if (state.state === 'granted') return;
          const deniedAt = state.state === 'denied' ? state.decidedAt : undefined;
          if (await claimConsentNotification(ctx.store, ctx.now(), authReqId, record, deniedAt))
            await onConsentRequired(hookRequest);
        })
        .catch(ctx.onError);
    }
  };
}
