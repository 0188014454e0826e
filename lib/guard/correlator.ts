import type { IncomingHttpHeaders } from 'node:http';
import type { Response } from 'express';

/**
 * CAMARA Commonalities' `x-correlator` (API Design Guide §5.8.5; CAMARA_common.yaml `XCorrelator`): the pattern
 * `^[a-zA-Z0-9-_:;.\/<>{}]{0,256}$`, here non-empty (an empty one has nothing to echo). The length cap is the
 * pattern's, so nothing long is ever copied into a response.
 */
const X_CORRELATOR = /^[A-Za-z0-9_:;./<>{}-]{1,256}$/;

/**
 * Echoes a valid `x-correlator` of the request's headers into the response (on success and on every refusal
 * alike). Anything else is never reflected: `invalid` when one was sent that fails the pattern (a header sent
 * twice arrives joined with ", " and fails it too), `absent` when none or an empty one was sent.
 */
export function echoCorrelator(headers: IncomingHttpHeaders, res: Response): 'echoed' | 'absent' | 'invalid' {
  const value = headers['x-correlator'];
  if (value === undefined || value === '') return 'absent';
  if (typeof value !== 'string' || !X_CORRELATOR.test(value)) return 'invalid';
  res.set('x-correlator', value);
  return 'echoed';
}
