import type { RequestHandler, Router } from 'express';
import { OAuthError } from './errors.js';
import { parseLoginHint } from './identity/login-hint.js';
import { parseScope } from './identity/scope.js';
import { findByLoginHint } from './identity/subscribers.js';
import type { ConsentRecord } from './consent/registry.js';
import { exportOf, outOfBandEvidence, type ConsentExport, type OutOfBandEvidence } from './consent/evidence.js';
import { createContext, type GatewayContext } from './gateway/context.js';
import type { NetAuthOptions } from './gateway/options.js';
import { createRouter, createWellKnownRouter } from './gateway/router.js';
import {
  createGuard,
  type GuardCollaborators,
  type GuardOptions,
  type NetAuthOptionalSubscriberGuard,
} from './guard/guard.js';
import { checkGuardOptions } from './guard/guard-options.js';
import { VerifiedAccessTokens } from './guard/verified-access-tokens.js';
import { metadata, type AuthorizationServerMetadata } from './gateway/endpoints/discovery.js';
import { decideBackchannelRequest } from './gateway/requests/backchannel-requests.js';
import type { NetAuthEventEmitter } from './ops/events.js';
import {
  revokeClient,
  revokeSubscriber,
  type ClientRevocation,
  type ClientRevocationResult,
  type SubscriberRevocation,
  type SubscriberRevocationResult,
} from './gateway/levers/revoke.js';
import { createMetricsRouter, type MetricsOptions, type MetricsRegistry } from './ops/metrics.js';

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

/**
 * A decision collected out-of-band, and what demonstrates it besides (kept in the records' `evidence`, with
 * `method: 'out_of_band'`): the notice your app or shop showed (SHA-256 of its text, your version of it), how
 * you identified the subscriber.
 */
export interface ConsentDecisionInput extends ConsentInput {
  evidence?: OutOfBandEvidence;
}

/** A withdrawal through the API: who asked for it (default the operator), and why, if you like. */
export interface ConsentRevokeInput extends ConsentInput {
  withdrawnBy?: 'client' | 'operator';
  reason?: string;
}

export interface ConsentApi {
  /** Records consent (e.g. collected out-of-band for a backend-flow request). */
  grant(input: ConsentDecisionInput): Promise<ConsentRecord[]>;
  /** Records a refusal: pending backend-flow requests are answered access_denied; tokens under a prior consent are revoked. */
  deny(input: ConsentDecisionInput): Promise<ConsentRecord[]>;
  /**
   * Withdraws consent and revokes every token issued under it. True if any consent was on record. The record is
   * kept as `withdrawn`, saying who withdrew it (`withdrawnBy`) through the API.
   */
  revoke(input: ConsentRevokeInput): Promise<boolean>;
  /** The live records (granted or denied) for the input's scopes. */
  lookup(input: ConsentInput): Promise<ConsentRecord[]>;
  /** Every live record (granted or denied) of one subscriber, named by `login_hint` or `subscriberId`. */
  list(input: SubscriberInput): Promise<ConsentRecord[]>;
  /**
   * Tells the gateway that consents ended outside it (a Consent Master that withdrew them on its own): the tokens
   * issued under the granted records' `grantId`s are revoked at once. The records are the registry's, as
   * `grant` answered them or `lookup` and `list` do.
   */
  withdrawn(records: readonly ConsentRecord[]): Promise<void>;
  /**
   * Every consent record of one subscriber (the directory's id) with its evidence, withdrawn ones included, as
   * JSON for the subscriber (GDPR Art. 15, 20) or a regulator (Art. 7(1)); docs/consent.md describes the fields.
   */
  export(subscriberId: string): Promise<ConsentExport>;
}

/** A subscriber, named by `login_hint` (`tel:+…`, `ipport:…`) or by the directory's `subscriberId`. */
export type SubscriberInput = Pick<ConsentInput, 'login_hint' | 'subscriberId'>;

export interface BackchannelApi {
  /** Approves a pending auth_req_id (when a `backchannel.authorize` hook defers the decision). */
  approve(auth_req_id: string): Promise<boolean>;
  deny(auth_req_id: string): Promise<boolean>;
}

/** The operator's lever over one subscriber (docs/operations.md#operating-the-gateway). */
export interface SubscribersApi {
  /**
   * Stops at once, on every instance, every access token (opaque and JWT), refresh token, pending auth_req_id,
   * unredeemed code and open consent interaction the subscriber has, with every client; consents are kept or
   * withdrawn by `consents` (default by reason). Requests made afterwards start clean. One `subscriber.revoked` event.
   */
  revoke(subscriberId: string, options: SubscriberRevocation): Promise<SubscriberRevocationResult>;
}

/** The operator's lever over one client (docs/operations.md#operating-the-gateway). */
export interface ClientsApi {
  /**
   * Stops at once, on every instance, every token and pending request of the client, for every subscriber; a
   * registration the registry returns afterwards under the same id starts clean. One `client.revoked` event.
   */
  revoke(clientId: string, options: ClientRevocation): Promise<ClientRevocationResult>;
}

export interface NetAuth {
  /** Mount at the issuer's path: `app.use('/apigateway', netauth.router)`. */
  router: Router;
  /**
   * The RFC 8414 metadata at the host's root (`/.well-known/oauth-authorization-server/apigateway` for the
   * issuer `https://host/apigateway`). Mount at the application's root: `app.use(netauth.wellKnown)`.
   */
  wellKnown: Router;
  /**
   * Middleware protecting a service API with the issued access tokens. By default only tokens issued for a
   * subscriber pass (`req.netauth`); with `subscriber: 'optional'` client-credentials tokens pass too, and the
   * grant, with or without a subscriber, is at `res.locals.netauth`.
   */
  guard(options: GuardOptions & { subscriber: 'optional' }): NetAuthOptionalSubscriberGuard;
  guard(options?: GuardOptions): RequestHandler;
  consent: ConsentApi;
  backchannel: BackchannelApi;
  subscribers: SubscribersApi;
  clients: ClientsApi;
  metadata(): AuthorizationServerMetadata;
  /**
   * Every state change as a typed event (docs/operations.md): `netauth.events.on('token.issued', (e) => …)`.
   * Payloads never carry secrets, tokens, codes, auth_req_ids or phone numbers.
   */
  events: NetAuthEventEmitter;
  /**
   * A router serving Prometheus metrics fed by the events (`GET /`), with a prom-client Registry of its own
   * (`router.registry`) unless `options.registry` is given. Mount it where only your scraper reaches:
   * `adminApp.use('/metrics', netauth.metricsRouter())`. Counting starts when it is created.
   */
  metricsRouter(options?: MetricsOptions): Router & { registry: MetricsRegistry };
  /**
   * Gives back the client-authentication slots this instance holds in Redis (call it before closing a store you
   * passed in) and releases the default store's timer. A store you passed in is yours to close.
   */
  close(): Promise<void>;
}

async function subject(ctx: GatewayContext, input: ConsentInput) {
  const requested = parseScope(input.scope);
  const subscriberId = await subscriberOf(ctx, input);
  return { clientId: input.clientId, subscriberId, purpose: requested.purpose, scopes: requested.scopes };
}

async function subscriberOf(ctx: GatewayContext, input: SubscriberInput): Promise<string> {
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
  return subscriberId;
}

/** Creates the gateway side: the router, the service-API guard and the out-of-band APIs, sharing one state. */
export function createNetAuth(options: NetAuthOptions): NetAuth {
  const ctx = createContext(options);
  const router = createRouter(ctx);
  // One for every guard of this gateway: a token verified at one route is known at the next.
  const verifiedAccessTokens = new VerifiedAccessTokens(ctx.now);
  // Every guard gets the context as the few collaborators it names.
  const guarding: GuardCollaborators = ctx;
  return {
    router,
    wellKnown: createWellKnownRouter(ctx),
    guard: (guardOptions) => {
      checkGuardOptions(guardOptions, ctx.policy);
      return createGuard(guarding, guardOptions, verifiedAccessTokens);
    },
    consent: {
      grant: async (input) => {
        const who = await subject(ctx, input);
        const records = await ctx.consent.grant(who, outOfBandEvidence(input.evidence));
        ctx.events.emit('consent.granted', { ...who, via: 'api' });
        return records;
      },
      deny: async (input) => {
        const who = await subject(ctx, input);
        const records = await ctx.consent.deny(who, outOfBandEvidence(input.evidence));
        ctx.events.emit('consent.denied', { ...who, via: 'api' });
        return records;
      },
      revoke: async (input) => {
        const who = await subject(ctx, input);
        const by = input.withdrawnBy ?? 'operator';
        if (by !== 'client' && by !== 'operator')
          throw new OAuthError('invalid_request', "withdrawnBy must be 'client' or 'operator'");
        if (input.reason !== undefined && (typeof input.reason !== 'string' || !/^[a-z0-9_]{1,64}$/.test(input.reason)))
          throw new OAuthError('invalid_request', 'reason must be 1 to 64 of a-z, 0-9 and _');
        const withdrawal = { by, via: 'api' as const, ...(input.reason !== undefined ? { reason: input.reason } : {}) };
        const revoked = (await ctx.consent.revoke(who, withdrawal)).length > 0;
        if (revoked) ctx.events.emit('consent.revoked', { ...who, via: 'api' });
        return revoked;
      },
      lookup: async (input) => ctx.consent.find(await subject(ctx, input)),
      list: async (input) => ctx.consent.list(await subscriberOf(ctx, input)),
      withdrawn: (records) => ctx.consent.withdrawn(records),
      export: async (subscriberId) => {
        if (typeof subscriberId !== 'string' || subscriberId === '')
          throw new OAuthError('invalid_request', 'give the subscriberId');
        const records = await ctx.consent.history(subscriberId);
        const names = new Map<string, string>();
        for (const clientId of new Set(records.map((r) => r.clientId))) {
          const name = (await ctx.clients.find(clientId))?.name;
          if (name !== undefined) names.set(clientId, name);
        }
        return exportOf(ctx.issuer, subscriberId, ctx.now(), records, names);
      },
    },
    backchannel: {
      approve: (id) => decideBackchannelRequest(ctx, id, 'approved'),
      deny: (id) => decideBackchannelRequest(ctx, id, 'denied'),
    },
    subscribers: { revoke: (subscriberId, revocation) => revokeSubscriber(ctx, subscriberId, revocation) },
    clients: { revoke: (clientId, revocation) => revokeClient(ctx, clientId, revocation) },
    metadata: () => metadata(ctx),
    events: ctx.events,
    metricsRouter: (metricsOptions) => createMetricsRouter(ctx.events, metricsOptions),
    close: async () => {
      // The lock-out slots this instance holds go back to the shared counters before the store's connection closes.
      await ctx.limits?.close();
      if (ctx.ownsStore) await ctx.store.close?.();
    },
  };
}
