import type { RequestHandler, Router } from 'express';
import { OAuthError } from './errors.js';
import { parseLoginHint } from './identity/login-hint.js';
import { parseScope } from './identity/scope.js';
import { findByLoginHint } from './identity/subscribers.js';
import type { ConsentRecord } from './consent/records.js';
import { createContext, type GatewayContext } from './gateway/context.js';
import type { NetAuthOptions } from './gateway/options.js';
import { createRouter } from './gateway/router.js';
import { createGuard, type GuardOptions } from './gateway/guard.js';
import { metadata, type AuthorizationServerMetadata } from './gateway/discovery.js';
import { decideBackchannelRequest } from './gateway/backchannel-requests.js';

/**
 * Whose consent, for what. The subscriber is named by `login_hint` (`tel:+…`, `ipport:…`) or by the
 * directory's `subscriberId`; the scope is a scope string as a client would request it.
 */
export interface ConsentInput {
  clientId: string;
  login_hint?: string;
  subscriberId?: string;
  scope: string;
}

export interface ConsentApi {
  /** Records consent (e.g. collected out-of-band for a backend-flow request). */
  grant(input: ConsentInput): Promise<ConsentRecord[]>;
  /** Records a refusal: pending backend-flow requests are answered access_denied; tokens under a prior consent are revoked. */
  deny(input: ConsentInput): Promise<ConsentRecord[]>;
  /** Withdraws consent and revokes every token issued under it. True if any consent was on record. */
  revoke(input: ConsentInput): Promise<boolean>;
  /** The live records (granted or denied) for the input's scopes. */
  lookup(input: ConsentInput): Promise<ConsentRecord[]>;
}

export interface BackchannelApi {
  /** Approves a pending auth_req_id (when a `backchannel.authorize` hook defers the decision). */
  approve(auth_req_id: string): Promise<boolean>;
  deny(auth_req_id: string): Promise<boolean>;
}

export interface NetAuth {
  /** Mount at the issuer's path: `app.use('/apigateway', netauth.router)`. */
  router: Router;
  /** Middleware protecting a service API with the issued access tokens. */
  guard(options?: GuardOptions): RequestHandler;
  consent: ConsentApi;
  backchannel: BackchannelApi;
  metadata(): AuthorizationServerMetadata;
  /** Releases the default store's timer. A store you passed in is yours to close. */
  close(): Promise<void>;
}

async function subject(ctx: GatewayContext, input: ConsentInput) {
  const requested = parseScope(input.scope);
  let subscriberId = input.subscriberId;
  if (input.login_hint !== undefined) {
    const subscriber = await findByLoginHint(ctx.subscribers, parseLoginHint(input.login_hint));
    if (!subscriber) throw new OAuthError('unknown_user_id', 'no subscriber is known by this login_hint');
    if (subscriberId !== undefined && subscriberId !== subscriber.id) {
      throw new OAuthError('invalid_request', 'login_hint and subscriberId name different subscribers');
    }
    subscriberId = subscriber.id;
  }
  if (subscriberId === undefined) throw new OAuthError('invalid_request', 'give login_hint or subscriberId');
  return { clientId: input.clientId, subscriberId, purpose: requested.purpose, scopes: requested.scopes };
}

/** Creates the gateway side: the router, the service-API guard and the out-of-band APIs, sharing one state. */
export function createNetAuth(options: NetAuthOptions): NetAuth {
  const ctx = createContext(options);
  const router = createRouter(ctx);
  return {
    router,
    guard: (guardOptions) => createGuard(ctx, guardOptions),
    consent: {
      grant: async (input) => ctx.consent.grant(await subject(ctx, input)),
      deny: async (input) => ctx.consent.deny(await subject(ctx, input)),
      revoke: async (input) => ctx.consent.revoke(await subject(ctx, input)),
      lookup: async (input) => ctx.consent.lookup(await subject(ctx, input)),
    },
    backchannel: {
      approve: (id) => decideBackchannelRequest(ctx, id, 'approved'),
      deny: (id) => decideBackchannelRequest(ctx, id, 'denied'),
    },
    metadata: () => metadata(ctx),
    close: async () => {
      if (ctx.ownsStore) await ctx.store.close?.();
    },
  };
}
