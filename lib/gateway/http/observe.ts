import { performance } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import type { Endpoint, EventHub } from '../../ops/events.js';
import type { GrantType } from '../../registry/clients.js';
import { answeredError } from './render-error.js';
import { formBodyOf } from './form.js';

/**
 * First in every endpoint's stack: times the request for the `request.completed` event. With nobody
 * listening it does nothing but one property read.
 */
export function observe(events: EventHub, endpoint: Endpoint, grantTypes?: ReadonlySet<string>): RequestHandler {
  return (req, res, next) => {
    if (!events.has('request.completed')) {
      next();
      return;
    }
    const start = performance.now();
    // 'close' comes after 'finish', and also when the connection is cut before the response ends.
    res.once('close', () => {
      const status = res.statusCode;
      const form = grantTypes && formBodyOf(req);
      const grantType: unknown = form !== null && typeof form === 'object' ? (form as Record<string, unknown>).grant_type : undefined;
      events.emit('request.completed', {
        endpoint,
        method: req.method,
        status,
        outcome: answeredError(res) ?? (status < 400 ? 'ok' : status >= 500 ? 'server_error' : 'invalid_request'),
        ...(typeof grantType === 'string' && grantTypes?.has(grantType) ? { grantType: grantType as GrantType } : {}),
        durationMs: performance.now() - start,
      });
    });
    next();
  };
}
