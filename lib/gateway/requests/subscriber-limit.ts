import type { EventHub } from '../../ops/events.js';
import { overLimit, type LimitedEndpoint, type RateLimits } from '../../ops/rate-limits.js';

/** What limiting by subscriber uses: the limits (undefined with `rateLimits: false`) and the events. */
export interface SubscriberLimits {
  limits: RateLimits | undefined;
  events: EventHub;
}

/**
 * The per-subscriber limits of one client's request concerning a subscriber (rateLimits.perClientAndSubscriber and
 * perSubscriber): over either, 429 with Retry-After, reported as `rate.limited`. Nothing with rate limits off.
 */
export async function limitSubscriber(
  ctx: SubscriberLimits,
  endpoint: LimitedEndpoint,
  clientId: string,
  subscriberId: string,
): Promise<void> {
  if (!ctx.limits) return;
  const hit = await ctx.limits.subscriber(endpoint, clientId, subscriberId);
  if (hit === undefined) return;
  throw overLimit(ctx.events, { endpoint, limit: hit.limit, clientId, subscriberId, retryAfter: hit.retryAfter });
}
