import type { Request } from 'express';
import { requireToken } from './session.js';

/**
 * `fetch` for service-API calls on behalf of the session: adds `Authorization: Bearer`, and fails with a
 * typed `no_token` / `token_expired` error instead of sending a request that can only be refused.
 */
export function serviceFetch(req: Request, input: string | URL, init: RequestInit = {}): Promise<Response> {
  const token = requireToken(req);
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${token.access_token}`);
  return fetch(input, { ...init, headers });
}
