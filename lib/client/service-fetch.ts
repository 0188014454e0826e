import type { Request } from 'express';
import { liveToken } from './session.js';

/**
 * `fetch` for service-API calls on behalf of the session: adds `Authorization: Bearer`, and fails with a
 * typed `no_token` / `token_expired` error instead of sending a request that can only be refused.
 * (A refresh helper would refresh an expiring token here too, before the call.)
 */
export async function serviceFetch(req: Request, now: number, input: string | URL, init: RequestInit = {}): Promise<Response> {
  const token = liveToken(req, now);
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${token.access_token}`);
  return fetch(input, { ...init, headers });
}
