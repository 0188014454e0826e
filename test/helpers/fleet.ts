/**
 * Talking to several gateway processes (test/helpers/gateway-process.ts) as a load balancer would hand
 * requests to them: the subscriber's browser, the relying party (openid-client) with endpoints on one
 * instance or another, and the plain token and service-API requests the multi-instance tests make.
 */
import * as client from 'openid-client';
import { APP1, CIBA, ISSUER, SECRET, SIM_SWAP } from './gateway.js';
import { ALICE_IP, CALLBACK, consentForm } from './frontend.js';
import type { GatewayProcess } from './gateway-process.js';

/** The same path and query on one instance: what a load balancer does with a URL under the issuer. */
export function on(instance: GatewayProcess, url: string | URL): string {
  const u = new URL(url);
  if (!u.href.startsWith(`${ISSUER}/`)) throw new Error(`${u.href} is not under the issuer`);
  return `${instance.url}${u.pathname}${u.search}`;
}

/** The subscriber's phone browser: the operator's edge reports the device address; redirects are looked at, not followed. */
export function browser(url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set('X-Forwarded-For', ALICE_IP);
  return fetch(url, { ...init, headers, redirect: 'manual' });
}

export function sessionCookie(res: Response): string {
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

export function form(fields: Record<string, string>): {
  method: 'POST';
  headers: Record<string, string>;
  body: URLSearchParams;
} {
  return {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  };
}

/** A form POST with app-1's client authentication. */
export function clientPost(url: string, fields: Record<string, string>): Promise<Response> {
  return fetch(url, {
    ...form(fields),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: APP1 },
  });
}

/**
 * The consent page of an authorization request whose answer was `start` (the 302 to the page), shown by `show`
 * and answered (`decision`) on `answer`, as the subscriber's browser would with its session cookie. Returns both
 * responses; `answer` is the 303 back to the application.
 */
export async function throughConsentPage(
  start: Response,
  show: GatewayProcess,
  answer: GatewayProcess,
  decision: 'allow' | 'deny' = 'allow',
): Promise<{ page: Response; answer: Response }> {
  const cookie = sessionCookie(start);
  const pageUrl = start.headers.get('location')!;
  const page = await browser(on(show, pageUrl), { headers: { Cookie: cookie } });
  const fields = consentForm(await page.clone().text());
  const answered = await browser(on(answer, new URL(fields.action, pageUrl)), {
    ...form({ interaction: fields.interaction, csrf: fields.csrf, decision }),
    headers: { Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  return { page, answer: answered };
}

/** A relying party whose front channel goes to `front` (authorize, bc-authorize) and whose token requests go to `back`. */
export function relyingParty(front: GatewayProcess, back: GatewayProcess): client.Configuration {
  const config = new client.Configuration(
    {
      issuer: ISSUER,
      authorization_endpoint: `${front.url}/apigateway/authorize`,
      backchannel_authentication_endpoint: `${front.url}/apigateway/bc-authorize`,
      token_endpoint: `${back.url}/apigateway/token`,
      authorization_response_iss_parameter_supported: true,
    },
    'app-1',
    undefined,
    client.ClientSecretBasic(SECRET),
  );
  client.allowInsecureRequests(config);
  return config;
}

/** GET /authorize for sim-swap (no consent needed) on one instance: the code. */
export async function codeFrom(instance: GatewayProcess): Promise<string> {
  const res = await browser(
    `${instance.url}/apigateway/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app-1', redirect_uri: CALLBACK, scope: SIM_SWAP })}`,
  );
  const code = new URL(res.headers.get('location') ?? 'x:').searchParams.get('code');
  if (res.status !== 302 || code === null)
    throw new Error(`authorize on ${instance.name}: ${res.status} ${res.headers.get('location')}`);
  return code;
}

export function redeem(instance: GatewayProcess, code: string): Promise<Response> {
  return clientPost(`${instance.url}/apigateway/token`, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: CALLBACK,
  });
}

export function bcAuthorizeOn(instance: GatewayProcess, loginHint: string, scope: string): Promise<Response> {
  return clientPost(`${instance.url}/apigateway/bc-authorize`, { login_hint: loginHint, scope });
}

export function pollOn(instance: GatewayProcess, authReqId: string): Promise<Response> {
  return clientPost(`${instance.url}/apigateway/token`, { grant_type: CIBA, auth_req_id: authReqId });
}

export function callApi(instance: GatewayProcess, token: string): Promise<Response> {
  return fetch(`${instance.url}/sim-swap/check`, { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
}

/** The operator's out-of-band consent service on one instance (a test-only route of gateway-main.ts). */
export function consentAdmin(
  instance: GatewayProcess,
  action: 'grant' | 'revoke',
  body: { clientId: string; login_hint: string; scope: string },
): Promise<Response> {
  return fetch(`${instance.url}/test-admin/consent${action === 'revoke' ? '/revoke' : ''}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}
