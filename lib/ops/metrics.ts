import express, { type Router } from 'express';
import type * as PromClient from 'prom-client';
import type { EventHub } from './events.js';
import { methodNotAllowed } from '../method-not-allowed.js';
import { requirePeer } from '../optional-peer.js';
import { METRICS_DEFAULTS } from '../defaults.js';

/**
 * A prom-client `Registry`, described by the members the package uses: the public types then compile
 * without prom-client, an optional peer dependency that only `metricsRouter()` loads.
 */
export interface MetricsRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
  registerMetric(metric: object): void;
}

export interface MetricsOptions {
  /**
   * Where the metrics are registered (a prom-client `Registry`).
   * @defaultValue a Registry of their own (never prom-client's global one)
   */
  registry?: MetricsRegistry;
  /**
   * Prefix of every metric name.
   * @defaultValue `netauth_`
   */
  prefix?: string;
  /**
   * Label counters with the client id. Only registered (or authenticated) clients' ids are used, so the label's
   * values are bounded by the registry; turn it off with very many clients.
   * @defaultValue true
   */
  clientIdLabel?: boolean;
  /**
   * Buckets of the latency histogram, in seconds.
   * @defaultValue `[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]`
   */
  buckets?: number[];
}

/**
 * Prometheus metrics fed by the gateway's events: one counter per kind of state change and a latency histogram
 * per endpoint, on a router of their own (mount it where only the scraper reaches, e.g. an admin port).
 * Every label has a bounded set of values: endpoints, grant types, outcomes, reasons, registered client ids.
 */
export function createMetricsRouter(
  events: EventHub,
  options: MetricsOptions = {},
): Router & { registry: MetricsRegistry } {
  const { Counter, Histogram, Registry } = requirePeer<typeof PromClient>('prom-client', 'netauth.metricsRouter()');
  // Any Registry the caller passes is prom-client's (the type above is its public surface).
  const registry = (options.registry as PromClient.Registry | undefined) ?? new Registry();
  const p = options.prefix ?? METRICS_DEFAULTS.prefix;
  const withClient = options.clientIdLabel ?? METRICS_DEFAULTS.clientIdLabel;
  const client = (clientId: string): { client_id?: string } => (withClient ? { client_id: clientId } : {});
  const labels = <T extends string>(...names: T[]): (T | 'client_id')[] =>
    withClient ? ['client_id', ...names] : names;
  const counter = <T extends string>(name: string, help: string, labelNames: T[]) =>
    new Counter<T>({ name: `${p}${name}`, help, labelNames, registers: [registry] });

  const authorizations = counter(
    'authorization_requests_total',
    'Authorization requests accepted at /authorize (frontend flow), by whether the consent page was shown.',
    labels('consent_page'),
  );
  const consents = counter(
    'consent_decisions_total',
    'Consent decisions, by decision (granted, denied, revoked) and where they were made (page, api).',
    labels('decision', 'via'),
  );
  const codes = counter(
    'authorization_codes_total',
    'Authorization codes, by outcome (issued, consumed, replayed).',
    labels('outcome'),
  );
  const ciba = counter(
    'ciba_total',
    'CIBA requests and poll answers, by outcome (requested, slow_down, approved, denied, expired).',
    labels('outcome'),
  );
  const issued = counter(
    'tokens_issued_total',
    'Access tokens issued, by grant type and format.',
    labels('grant_type', 'format'),
  );
  const revoked = counter(
    'tokens_revoked_total',
    'Token revocations, by reason (revocation_request, code_replay, consent_withdrawn).',
    labels('reason'),
  );
  const levers = counter(
    'operator_revocations_total',
    "The operator's levers pulled (subscribers.revoke, clients.revoke), by what was revoked (subscriber, client) and reason.",
    ['revoked', 'reason'],
  );
  const authFailures = counter(
    'client_authentication_failures_total',
    'Failed client authentications, by endpoint and reason.',
    ['endpoint', 'reason'],
  );
  const limited = counter(
    'rate_limited_total',
    'Requests refused by a rate limit or the client-authentication lock-out, by endpoint and limit.',
    ['endpoint', 'limit'],
  );
  const fallbacks = counter(
    'rate_limit_fallback_operations_total',
    'Rate-limit counter operations this instance answered alone because the shared (Redis) counters failed, by cause (unavailable, error).',
    ['cause'],
  );
  const redemptions = counter(
    'redemptions_total',
    'Redemptions (code, approved auth_req_id, refresh token) whose store step failed after it was sent (unsettled: the answer may be lost), and retries that got such an answer (redelivered).',
    labels('grant_type', 'outcome'),
  );
  const requests = counter(
    'requests_total',
    'Router responses, by endpoint, grant type (token endpoint) and outcome (ok or the OAuth error code).',
    ['endpoint', 'grant_type', 'outcome'],
  );
  const latency = new Histogram({
    name: `${p}request_duration_seconds`,
    help: 'Latency of router responses, by endpoint.',
    labelNames: ['endpoint'],
    buckets: options.buckets ?? [...METRICS_DEFAULTS.buckets],
    registers: [registry],
  });

  events
    .on('authorization.requested', (e) =>
      authorizations.inc({ ...client(e.clientId), consent_page: String(e.consentPage) }),
    )
    .on('consent.granted', (e) => consents.inc({ ...client(e.clientId), decision: 'granted', via: e.via }))
    .on('consent.denied', (e) => consents.inc({ ...client(e.clientId), decision: 'denied', via: e.via }))
    .on('consent.revoked', (e) => consents.inc({ ...client(e.clientId), decision: 'revoked', via: e.via }))
    .on('code.issued', (e) => codes.inc({ ...client(e.clientId), outcome: 'issued' }))
    .on('code.consumed', (e) => codes.inc({ ...client(e.clientId), outcome: 'consumed' }))
    .on('code.replayed', (e) => codes.inc({ ...client(e.clientId), outcome: 'replayed' }))
    .on('ciba.requested', (e) => ciba.inc({ ...client(e.clientId), outcome: 'requested' }))
    .on('ciba.slow_down', (e) => ciba.inc({ ...client(e.clientId), outcome: 'slow_down' }))
    .on('ciba.approved', (e) => ciba.inc({ ...client(e.clientId), outcome: 'approved' }))
    .on('ciba.denied', (e) => ciba.inc({ ...client(e.clientId), outcome: 'denied' }))
    .on('ciba.expired', (e) => ciba.inc({ ...client(e.clientId), outcome: 'expired' }))
    .on('token.issued', (e) => issued.inc({ ...client(e.clientId), grant_type: e.grantType, format: e.format }))
    .on('token.revoked', (e) => revoked.inc({ ...client(e.clientId), reason: e.reason }))
    .on('subscriber.revoked', (e) => levers.inc({ revoked: 'subscriber', reason: e.reason }))
    .on('client.revoked', (e) => levers.inc({ revoked: 'client', reason: e.reason }))
    .on('client.authentication_failed', (e) => authFailures.inc({ endpoint: e.endpoint, reason: e.reason }))
    .on('rate.limited', (e) => limited.inc({ endpoint: e.endpoint, limit: e.limit }))
    .on('rate.fallback', (e) => fallbacks.inc({ cause: e.cause }, e.operations))
    .on('redemption.unsettled', (e) =>
      redemptions.inc({ ...client(e.clientId), grant_type: e.grantType, outcome: 'unsettled' }),
    )
    .on('redemption.redelivered', (e) =>
      redemptions.inc({ ...client(e.clientId), grant_type: e.grantType, outcome: 'redelivered' }),
    )
    .on('request.completed', (e) => {
      requests.inc({ endpoint: e.endpoint, grant_type: e.grantType ?? '', outcome: e.outcome });
      latency.observe({ endpoint: e.endpoint }, e.durationMs / 1000);
    });

  const router = express.Router() as Router & { registry: MetricsRegistry };
  router
    .route('/')
    .get((_req, res, next) => {
      registry.metrics().then((text) => {
        res.set('Content-Type', registry.contentType).set('Cache-Control', 'no-store').send(text);
      }, next);
    })
    .all(methodNotAllowed('GET, HEAD'));
  router.registry = registry;
  return router;
}
