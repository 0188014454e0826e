import { performance } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import type { Endpoint, EventHub } from '../../ops/events.js';
import type { GrantType } from '../../registry/clients.js';
import { step, type RequestContext } from './request-context.js';

/** The request's grant type, if it names one of `grantTypes` once (a repeated one names none). */
function grantTypeOf(request: RequestContext, grantTypes: ReadonlySet<string>): GrantType | undefined {
  let grantType: string | undefined;
  try {
    grantType = request.params.get('grant_type');
  } catch {
    return undefined;
  }
  return grantType !== undefined && grantTypes.has(grantType) ? (grantType as GrantType) : undefined;
}

/**
 * Second in every endpoint's stack, after the request's context: times the request for the `request.completed`
 * event. With nobody listening it does nothing but one property read.
 */
export function observe(events: EventHub, endpoint: Endpoint, grantTypes?: ReadonlySet<string>): RequestHandler {
  return step((request, req, res, next) => {
    if (!events.has('request.completed')) {
      next();
      return;
    }
    const start = performance.now();
    // 'close' comes after 'finish', and also when the connection is cut before the response ends.
    res.once('close', () => {
      const status = res.statusCode;
      const grantType = grantTypes && grantTypeOf(request, grantTypes);
      events.emit('request.completed', {
        endpoint,
        method: req.method,
        status,
        outcome: request.answered ?? (status < 400 ? 'ok' : status >= 500 ? 'server_error' : 'invalid_request'),
        ...(grantType === undefined ? {} : { grantType }),
        // Microseconds are the clock's real precision; more digits are float noise in every log line.
        durationMs: Math.round((performance.now() - start) * 1000) / 1000,
      });
    });
    next();
  });
}
