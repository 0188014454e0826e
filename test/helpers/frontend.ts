import { createHash, randomBytes } from 'node:crypto';
import request from 'supertest';
import type { Express } from 'express';
import type { Response } from 'supertest';
import { CLIENTS, ISSUER, PORT_HEADER, basic, type TestGateway } from './gateway.js';
import type { RegisteredClient } from '../../lib/index.js';

/** Frontend-flow helpers over the gateway fixture (test/helpers/gateway.ts). */

export const CALLBACK = 'https://app.example/callback';
export const SIM_SWAP = 'dpv:FraudPreventionAndDetection#sim-swap';
/** Basis `consent` in the fixture policy: the consent page is shown. */
export const LOCATION = 'dpv:FraudPreventionAndDetection#device-location';
export const ALICE_IP = '10.20.0.1';
export const BOB_IP = '10.20.0.2';
export const CGNAT_IP = '100.64.0.1';

/** A client that must use PKCE, besides the fixture's clients. */
export const PKCE_CLIENT: RegisteredClient = {
  clientId: 'pkce-app',
  name: 'PKCE App',
  clientSecret: 'pkce-secret',
  redirectUris: ['https://pkce.example/cb', 'https://pkce.example/cb?tenant=7', 'com.example.app:/oauth2redirect'],
  grantTypes: ['authorization_code'],
  scopes: [SIM_SWAP],
  requirePkce: true,
};
export const CLIENTS_WITH_PKCE: RegisteredClient[] = [...CLIENTS, PKCE_CLIENT];

export const APP1_AUTH = basic('app-1', CLIENTS[0]!.clientSecret!);

export type Query = Record<string, string | string[] | undefined>;

/** A valid authorization request of app-1 for sim-swap (no consent needed), with overrides; `undefined` drops a parameter. */
export function authorizeQuery(overrides: Query = {}): string {
  const params: Query = {
    response_type: 'code',
    client_id: 'app-1',
    redirect_uri: CALLBACK,
    scope: SIM_SWAP,
    state: 'state-123',
    ...overrides,
  };
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue;
    for (const v of [value].flat()) search.append(name, v);
  }
  return search.toString();
}

export interface Device {
  /** The device's address as the operator's edge reports it (X-Forwarded-For). */
  ip?: string;
  /** Source port header (CGNAT). */
  port?: string;
  cookie?: string;
}

/** GET /authorize from a device; ALICE's phone by default. */
export function authorize(app: Express, overrides: Query = {}, device: Device = {}): request.Test {
  const req = request(app).get(`/apigateway/authorize?${authorizeQuery(overrides)}`);
  const ip = device.ip ?? ALICE_IP;
  if (ip !== '') req.set('X-Forwarded-For', ip);
  if (device.port !== undefined) req.set(PORT_HEADER, device.port);
  if (device.cookie !== undefined) req.set('Cookie', device.cookie);
  return req;
}

/** The Location header, parsed. */
export function location(res: Response): URL {
  const value = res.headers.location as string | undefined;
  if (value === undefined) throw new Error(`no Location header (status ${res.status}): ${res.text}`);
  return new URL(value);
}

/** The query of a redirect to the application, as a plain object (repeated names would show as the last). */
export function callback(res: Response): Record<string, string> {
  const url = location(res);
  return Object.fromEntries(url.searchParams);
}

/** Path and query of a Location under the issuer, for supertest. */
export function localPath(url: URL): string {
  const issuer = new URL(ISSUER);
  if (url.origin !== issuer.origin) throw new Error(`${url.href} is not under the issuer`);
  return `${url.pathname}${url.search}`;
}

/** `name=value` pairs of the Set-Cookie headers, as a browser would send them back. */
export function cookies(res: Response): string {
  const set = res.headers['set-cookie'] as unknown as string[] | undefined;
  return (set ?? []).map((c) => c.split(';')[0]!).join('; ');
}

/** The hidden inputs of the consent form, read from the HTML as a browser would. */
export function consentForm(html: string): { action: string; interaction: string; csrf: string } {
  const action = /<form[^>]*action="([^"]*)"/.exec(html)?.[1];
  const interaction = /<input type="hidden" name="interaction" value="([^"]*)">/.exec(html)?.[1];
  const csrf = /<input type="hidden" name="csrf" value="([^"]*)">/.exec(html)?.[1];
  if (action === undefined || interaction === undefined || csrf === undefined)
    throw new Error(`no consent form in: ${html}`);
  return { action, interaction, csrf };
}

/** Resolves the form's action against the page URL, as a browser would. */
export function formTarget(pagePath: string, action: string): string {
  const url = new URL(action, `http://local${pagePath}`);
  return `${url.pathname}${url.search}`;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** POST /token with grant_type=authorization_code. */
export function redeem(
  app: Express,
  fields: Record<string, string | undefined>,
  auth: string = APP1_AUTH,
): request.Test {
  const form = new URLSearchParams();
  form.set('grant_type', 'authorization_code');
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) form.set(name, value);
  return request(app).post('/apigateway/token').set('Authorization', auth).type('form').send(form.toString());
}

/** Runs GET /authorize for a consent-free scope and returns the code. */
export async function codeFor(gw: TestGateway, overrides: Query = {}, device: Device = {}): Promise<string> {
  const res = await authorize(gw.app, overrides, device);
  if (res.status !== 302) throw new Error(`authorize answered ${res.status}: ${res.text}`);
  const code = callback(res).code;
  if (code === undefined) throw new Error(`no code in ${res.headers.location as string}`);
  return code;
}

/** Calls the fixture's sim-swap service API with a bearer token. */
export function callApi(app: Express, token: string): request.Test {
  return request(app).post('/sim-swap/check').set('Authorization', `Bearer ${token}`);
}

/**
 * Drives the consent page as a browser would: follows the 302 to the page with the session cookie,
 * reads the form, submits it with the chosen button, and returns the 303 answer.
 */
export async function answerConsent(
  gw: TestGateway,
  authorizeRes: Response,
  decision: 'allow' | 'deny',
  device: Device = {},
): Promise<Response> {
  return submitConsent(gw.app, localPath(location(authorizeRes)), cookies(authorizeRes), decision, device);
}

/**
 * GET the consent page at `pagePath` with the session cookie, then submit its form; the 303 answer. The answer
 * comes from `device` (ALICE's phone by default): the gateway takes it only from the line the request started on.
 */
export async function submitConsent(
  app: Express,
  pagePath: string,
  cookie: string,
  decision: 'allow' | 'deny',
  device: Device = {},
): Promise<Response> {
  const page = await request(app).get(pagePath).set('Cookie', cookie);
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}: ${page.text}`);
  const form = consentForm(page.text);
  return fromDevice(request(app).post(formTarget(pagePath, form.action)), device)
    .set('Cookie', cookie)
    .type('form')
    .send({ interaction: form.interaction, csrf: form.csrf, decision });
}

/** A request from a device: its address (ALICE's phone by default; '' for none) and CGNAT port. */
export function fromDevice(req: request.Test, device: Device = {}): request.Test {
  const ip = device.ip ?? ALICE_IP;
  if (ip !== '') req.set('X-Forwarded-For', ip);
  if (device.port !== undefined) req.set(PORT_HEADER, device.port);
  return req;
}
