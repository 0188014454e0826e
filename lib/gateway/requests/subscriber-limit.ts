import { overLimit, type LimitedEndpoint } from '../../ops/rate-limits.js';
import type { GatewayContext } from '../context.js';

/**
 * The per-subscriber limits of one client's request concerning a subscriber (rateLimits.perClientAndSubscriber and
 * perSubscriber): over either, 429 with Retry-After, reported as `rate.limited`. Nothing with rate limits off.
 */
export async function limitSubscriber(
  ctx: GatewayContext,
  endpoint: LimitedEndpoint,
  clientId: string,
  subscriberId: string,
): Promise<void> {
  if (!ctx.limits) return;
  const hit = await ctx.limits.subscriber(endpoint, clientId, subscriberId);
  if (hit === undefined) return;
  throw overLimit(ctx.events, { endpoint, limit: hit.limit, clientId, subscriberId, retryAfter: hit.retryAfter });
}
