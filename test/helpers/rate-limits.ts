import type { RateLimitOptions } from '../../lib/index.js';

/** Every limit off except the ones given: each rate-limit test looks at one limit. */
export function only(limits: RateLimitOptions): RateLimitOptions {
  return {
    ...limits,
    authorize: { perAddress: false, ...limits.authorize },
    bcAuthorize: { perClient: false, perClientAndSubscriber: false, perSubscriber: false, ...limits.bcAuthorize },
    token: { perClient: false, perClientAndSubscriber: false, perSubscriber: false, ...limits.token },
    clientAuthentication: { perClientAndAddress: false, perAddress: false, ...limits.clientAuthentication },
  };
}
