import { hashedRecordId } from '../../../lib/crypto.js';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { MemoryStore, StoreUnavailableError, type Store } from '../../../lib/index.js';
import type { CodeRecord } from '../../../lib/gateway/requests/authorization-codes.js';
import { ISSUER, createTestGateway } from '../../helpers/gateway.js';
import { listen } from '../../helpers/listen.js';
import {
  CALLBACK,
  CLIENTS_WITH_PKCE,
  LOCATION,
  SIM_SWAP,
  authorize,
  authorizeQuery,
  callback,
  location,
  pkcePair,
} from '../../helpers/frontend.js';
import { wrapStore } from '../../helpers/store-wrapper.js';

/** docs/protocol.md, "Frontend flow: GET /authorize", steps 1, 2, 5, 6. Network identification: network.test.ts. */

function expectSecurityHeaders(res: request.Response): void {
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
}

describe('step 1: client and redirect_uri, answered with an error page and never a redirect', () => {
  const gw = createTestGateway();

  it.each([
    ['unknown client_id', { client_id: 'nobody' }],
    ['missing client_id', { client_id: undefined }],
    ['missing redirect_uri', { redirect_uri: undefined }],
    ['empty redirect_uri', { redirect_uri: '' }],
    ['redirect_uri with a trailing slash', { redirect_uri: `${CALLBACK}/` }],
    ['redirect_uri with another case', { redirect_uri: CALLBACK.toUpperCase() }],
    ['redirect_uri with an extra query', { redirect_uri: `${CALLBACK}?next=https://evil.example` }],
    ['redirect_uri with a fragment', { redirect_uri: `${CALLBACK}#x` }],
    ['redirect_uri prefix', { redirect_uri: 'https://app.example/call' }],
    ['redirect_uri on another host', { redirect_uri: 'https://evil.example/callback' }],
    ['redirect_uri of another client', { redirect_uri: 'https://two.example/cb' }],
    ['client_id sent twice', { client_id: ['app-1', 'app-1'] }],
    ['redirect_uri sent twice', { redirect_uri: [CALLBACK, CALLBACK] }],
  ])('%s: 400 HTML page, no Location', async (_name, overrides) => {
    const res = await authorize(gw.app, overrides);
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('invalid_request');
    expectSecurityHeaders(res);
  });

  it('checks the client and redirect_uri before anything else (a bad response_type still gets the page)', async () => {
    const res = await authorize(gw.app, { client_id: 'nobody', response_type: 'token' });
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });

  it('the page reflects nothing of the request, so it cannot be used for markup injection', async () => {
    const res = await authorize(gw.app, { client_id: '<script>alert(1)</script>' });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain('<script>');
    expect(res.text).not.toMatch(/<script|<link|src="http/);
  });
});

describe('step 2: later errors redirect to redirect_uri with error, error_description, the exact state and iss', () => {
  const gw = createTestGateway({ clients: CLIENTS_WITH_PKCE });

  async function errorFor(
    overrides: Record<string, string | string[] | undefined>,
    expected: string,
  ): Promise<Record<string, string>> {
    const res = await authorize(gw.app, overrides);
    expect(res.status).toBe(302);
    const url = location(res);
    expect(`${url.origin}${url.pathname}`).toBe(overrides.redirect_uri ?? CALLBACK);
    const q = callback(res);
    expect(q.error).toBe(expected);
    expect(q.code).toBeUndefined();
    expect(q.iss).toBe(ISSUER);
    expect(typeof q.error_description).toBe('string');
    expectSecurityHeaders(res);
    return q;
  }

  it.each([
    ['response_type missing', { response_type: undefined }, 'invalid_request'],
    ['response_type token', { response_type: 'token' }, 'unsupported_response_type'],
    ['response_type "code id_token"', { response_type: 'code id_token' }, 'unsupported_response_type'],
    ['response_type sent twice', { response_type: ['code', 'code'] }, 'invalid_request'],
    ['scope missing', { scope: undefined }, 'invalid_request'],
    ['scope sent twice', { scope: [SIM_SWAP, SIM_SWAP] }, 'invalid_request'],
    ['unknown scope', { scope: 'dpv:FraudPreventionAndDetection#teleport' }, 'invalid_scope'],
    ['unknown purpose', { scope: 'dpv:Astrology#sim-swap' }, 'invalid_scope'],
    ['scope the client is not registered for', { scope: 'dpv:Marketing#sim-swap' }, 'invalid_scope'],
    ['two purposes', { scope: `${SIM_SWAP} dpv:RequestedServiceProvision#number-verification` }, 'invalid_scope'],
    ['policy forbids the purpose and scope', { scope: 'dpv:Marketing#device-location' }, 'access_denied'],
    [
      'code_challenge_method plain',
      { code_challenge: pkcePair().verifier, code_challenge_method: 'plain' },
      'invalid_request',
    ],
    ['code_challenge without a method (plain by default)', { code_challenge: pkcePair().challenge }, 'invalid_request'],
    ['code_challenge_method without code_challenge', { code_challenge_method: 'S256' }, 'invalid_request'],
    ['malformed code_challenge', { code_challenge: 'short', code_challenge_method: 'S256' }, 'invalid_request'],
    ['unknown prompt value', { prompt: 'sometimes' }, 'invalid_request'],
    ['prompt=none with another value', { prompt: 'none consent' }, 'invalid_request'],
    ['response_mode fragment', { response_mode: 'fragment' }, 'invalid_request'],
    ['OIDC claims without openid: scope phone', { scope: `phone ${SIM_SWAP}` }, 'invalid_request'],
    ['OIDC claims without openid: scope profile', { scope: `profile ${SIM_SWAP}` }, 'invalid_request'],
    ['OIDC claims without openid: the claims parameter', { claims: '{"userinfo":{"email":null}}' }, 'invalid_request'],
    ['login_hint sent twice', { login_hint: ['tel:+34600000001', 'tel:+34600000001'] }, 'invalid_request'],
  ])('%s: %s', async (_name, overrides, expected) => {
    const q = await errorFor(overrides, expected);
    expect(q.state).toBe('state-123');
  });

  it('a client not registered for the code grant: unauthorized_client', async () => {
    await errorFor(
      { client_id: 'app-2', redirect_uri: 'https://two.example/cb', scope: SIM_SWAP },
      'unauthorized_client',
    );
  });

  it('a client that requires PKCE, without it: invalid_request', async () => {
    await errorFor({ client_id: 'pkce-app', redirect_uri: 'https://pkce.example/cb' }, 'invalid_request');
  });

  it.each([
    ['plain', 'state-123'],
    ['with reserved characters', 'a b&c=d?e/f#g+h%'],
    ['unicode', 'état-☎-📱'],
    ['a phone number', '+34600000001'],
    ['long', 'x'.repeat(2000)],
  ])('echoes the state exactly (%s)', async (_name, state) => {
    const ok = await authorize(gw.app, { state });
    expect(callback(ok).state).toBe(state);
    const error = await authorize(gw.app, { state, response_type: 'token' });
    expect(callback(error).state).toBe(state);
  });

  it('never invents a state: none sent, none returned (success and error)', async () => {
    for (const res of [
      await authorize(gw.app, { state: undefined }),
      await authorize(gw.app, { state: undefined, scope: 'dpv:Nope#x' }),
    ]) {
      expect(location(res).searchParams.has('state')).toBe(false);
      expect(callback(res).iss).toBe(ISSUER);
    }
  });

  it('an empty state counts as absent', async () => {
    const res = await authorize(gw.app, { state: '' });
    expect(location(res).searchParams.has('state')).toBe(false);
  });

  it('a state sent twice: invalid_request, answered without a state', async () => {
    const res = await authorize(gw.app, { state: ['one', 'two'] });
    expect(callback(res).error).toBe('invalid_request');
    expect(location(res).searchParams.has('state')).toBe(false);
  });

  it('unknown parameters are ignored', async () => {
    const res = await authorize(gw.app, { utm_source: 'x', claims_locales: 'es', acr_values: 'urn:x', max_age: '0' });
    expect(callback(res).code).toBeDefined();
  });

  it('keeps the query a registered redirect_uri already has, and works with custom schemes', async () => {
    const { challenge } = pkcePair();
    const res = await authorize(gw.app, {
      client_id: 'pkce-app',
      redirect_uri: 'com.example.app:/oauth2redirect',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    expect(res.status).toBe(302);
    expect(res.headers.location).toMatch(/^com\.example\.app:\/oauth2redirect\?code=/);
    const withQuery = await authorize(gw.app, {
      client_id: 'pkce-app',
      redirect_uri: 'https://pkce.example/cb?tenant=7',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'dpv:Nope#x',
    });
    expect(withQuery.headers.location).toMatch(/^https:\/\/pkce\.example\/cb\?tenant=7&error=invalid_scope&/);
    expect(callback(withQuery).tenant).toBe('7');
  });
});

describe('error descriptions that quote the request', () => {
  it('a huge value is cut: the Location header stays small', async () => {
    const gw = createTestGateway();
    const res = await authorize(gw.app, { prompt: `x${'y'.repeat(8000)}` });
    expect(res.status).toBe(302);
    const q = callback(res);
    expect(q.error).toBe('invalid_request');
    expect(q.error_description!.length).toBeLessThanOrEqual(200);
    expect(q.error_description).toMatch(/\.\.\.$/);
    expect((res.headers.location as string).length).toBeLessThan(1000);
  });
});

describe('step 6: success', () => {
  it('302 to redirect_uri?code&state&iss; the code is a placement tag and 256 random bits, base64url', async () => {
    const gw = createTestGateway();
    const res = await authorize(gw.app);
    expect(res.status).toBe(302);
    const url = location(res);
    expect(`${url.origin}${url.pathname}`).toBe(CALLBACK);
    expect([...url.searchParams.keys()]).toEqual(['code', 'state', 'iss']);
    const q = callback(res);
    expect(q.code).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    expect(q.state).toBe('state-123');
    expect(q.iss).toBe(ISSUER);
    expectSecurityHeaders(res);
    const second = callback(await authorize(gw.app)).code;
    expect(second).not.toBe(q.code);
  });

  it('stores the code with its client, redirect_uri, subscriber, PKCE challenge and nonce (for the ID token)', async () => {
    const store = new MemoryStore({ sweepInterval: 0, now: () => 1_800_000_000_000 });
    const gw = createTestGateway({ store });
    const { challenge } = pkcePair();
    const res = await authorize(gw.app, {
      nonce: 'n-0S6_WzA2Mj',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: `openid ${SIM_SWAP}`,
    });
    const stored = await store.get<CodeRecord>('code', hashedRecordId(callback(res).code!));
    expect(stored?.value).toMatchObject({
      clientId: 'app-1',
      redirectUri: CALLBACK,
      subscriberId: 'sub-alice',
      codeChallenge: challenge,
      nonce: 'n-0S6_WzA2Mj',
      scope: `openid ${SIM_SWAP}`,
      expiresAt: 1_800_000_000_000 + 60_000,
    });
    const without = await store.get<CodeRecord>('code', hashedRecordId(callback(await authorize(gw.app)).code!));
    expect(without?.value.nonce).toBeNull();
    expect(without?.value.codeChallenge).toBeNull();
  });

  it('HEAD is answered like GET; other methods are 405 with Allow', async () => {
    const gw = createTestGateway();
    const head = await request(gw.app)
      .head(`/apigateway/authorize?${authorizeQuery()}`)
      .set('X-Forwarded-For', '10.20.0.1');
    expect(head.status).toBe(302);
    expect(head.headers.location).toMatch(/^https:\/\/app\.example\/callback\?code=/);
    for (const method of ['post', 'put', 'delete'] as const) {
      const res = await request(gw.app)[method](`/apigateway/authorize?${authorizeQuery()}`);
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
      expect(res.headers.location).toBeUndefined();
    }
  });

  it("the app's query parser setting does not change how parameters are read", async () => {
    const gw = createTestGateway();
    gw.app.set('query parser', 'extended');
    const res = await request(gw.app)
      .get(`/apigateway/authorize?${authorizeQuery()}&scope[a]=b`)
      .set('X-Forwarded-For', '10.20.0.1');
    // `scope[a]` is just an unknown parameter name here, not a nested scope.
    expect(callback(res).code).toBeDefined();
  });
});

describe('request targets', () => {
  /** One request written byte for byte: an absolute-form target is what proxies send and what supertest cannot. */
  async function rawGet(app: Express, target: string): Promise<{ status: number; head: string }> {
    const server = await listen(app);
    try {
      const text = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
        const chunks: Buffer[] = [];
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('error', reject);
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
        socket.write(
          `GET ${target} HTTP/1.1\r\nHost: gateway.test\r\nX-Forwarded-For: 10.20.0.1\r\nConnection: close\r\n\r\n`,
        );
      });
      return { status: Number(text.slice(9, 12)), head: text.slice(0, text.indexOf('\r\n\r\n')) };
    } finally {
      await server.close();
    }
  }

  // Regression (found by test/properties): the query was read with `new URL(originalUrl, base)`, which throws
  // on an absolute-form target whose authority WHATWG refuses, and bad input became a 500.
  it.each(['http://x:99999', 'http://x@', 'http://1.2.3.256'])(
    'an absolute-form target with authority %s is read by its query, never a 500',
    async (authority) => {
      const reported: unknown[] = [];
      const gw = createTestGateway({ onError: (e) => reported.push(e) });
      const ok = await rawGet(gw.app, `${authority}/apigateway/authorize?${authorizeQuery()}`);
      expect(ok.status).toBe(302);
      expect(ok.head).toMatch(/\r\nLocation: https:\/\/app\.example\/callback\?code=/i);
      const page = await rawGet(gw.app, `${authority}/apigateway/consent?interaction=x`);
      expect(page.status).toBe(400);
      expect(reported).toEqual([]);
    },
  );
});

describe('prompt', () => {
  const gw = createTestGateway();

  it('prompt=none with consent needed: consent_required', async () => {
    const q = callback(await authorize(gw.app, { scope: LOCATION, prompt: 'none' }));
    expect(q.error).toBe('consent_required');
    expect(q.state).toBe('state-123');
    expect(q.iss).toBe(ISSUER);
  });

  // Regression (found by test/properties): the description quoted the prompt value as sent, with '"',
  // control characters and unicode, none of which RFC 6749 §4.1.2.1 allows in error_description.
  it('an unknown prompt value is quoted in error_description within RFC 6749’s character set', async () => {
    const q = callback(await authorize(gw.app, { prompt: 'é"\\\u0007x' }));
    expect(q.error).toBe('invalid_request');
    expect(q.error_description).toBe("unsupported prompt value '?'/?x'");
  });

  it('prompt=none without consent needed: the code, silently', async () => {
    expect(callback(await authorize(gw.app, { prompt: 'none' })).code).toBeDefined();
  });

  it('prompt=none with consent on record: the code', async () => {
    await gw.netauth.consent.grant({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION });
    expect(callback(await authorize(gw.app, { scope: LOCATION, prompt: 'none' })).code).toBeDefined();
  });

  it('prompt=none when the network does not identify the subscriber: login_required', async () => {
    const q = callback(await authorize(gw.app, { prompt: 'none' }, { ip: '192.0.2.10' }));
    expect(q.error).toBe('login_required');
    expect(q.error_description).toBe('subscriber not identified by the mobile network');
  });

  it('prompt=login and prompt=select_account are satisfied by network identification', async () => {
    expect(callback(await authorize(gw.app, { prompt: 'login' })).code).toBeDefined();
    expect(callback(await authorize(gw.app, { prompt: 'select_account' })).code).toBeDefined();
  });
});

describe('failures of the service itself, after the redirect_uri is known: redirected too', () => {
  function failingStore(error: Error): Store {
    const inner = new MemoryStore({ sweepInterval: 0 });
    return wrapStore(inner, {
      put: async (kind, id, value, options) => {
        if (kind === 'code' || kind === 'session') throw error;
        return inner.put(kind, id, value, options);
      },
    });
  }

  it('an unreachable store: temporarily_unavailable, with the state', async () => {
    const gw = createTestGateway({ store: failingStore(new StoreUnavailableError('down')) });
    for (const scope of [SIM_SWAP, LOCATION]) {
      const q = callback(await authorize(gw.app, { scope }));
      expect(q).toMatchObject({ error: 'temporarily_unavailable', state: 'state-123', iss: ISSUER });
    }
  });

  it('an unexpected error: server_error revealing nothing, reported to onError', async () => {
    const reported: unknown[] = [];
    const gw = createTestGateway({ store: failingStore(new Error('secret detail')), onError: (e) => reported.push(e) });
    const res = await authorize(gw.app);
    expect(callback(res)).toMatchObject({
      error: 'server_error',
      error_description: 'internal error',
      state: 'state-123',
    });
    expect(res.headers.location).not.toContain('secret');
    expect(reported).toHaveLength(1);
  });
});
