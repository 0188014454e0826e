import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { APP1, APP2, CIBA, LOCATION, SIM_SWAP, basic } from '../helpers/gateway.js';
import { ALICE_IP, CALLBACK, pkcePair } from '../helpers/frontend.js';
import {
  TOKEN_ERRORS,
  expectJsonEndpointAnswer,
  formOf,
  report,
  startGateway,
  type Answer,
  type PropertyGateway,
} from './support.js';

/**
 * The two grants of POST /token against a model (docs/protocol.md, "Token endpoint"):
 * - authorization code: any sequence of wrong redemptions (code, redirect_uri, PKCE, client, duplicates)
 *   is refused with the modelled error and burns nothing; the right one then gets the token exactly once;
 *   a replay is invalid_grant and revokes the token.
 * - CIBA: polls at generated times follow the model of authorization_pending / slow_down (+5 s per early
 *   poll, measured from the previous poll) / expired_token / access_denied / the token, then invalid_grant.
 */

const FORM = 'application/x-www-form-urlencoded';
const CODE_ONLY = basic('code-only', 'code-secret');

type Fields = [string, string][];

describe('token endpoint grants against a model', () => {
  let gw: PropertyGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    report('grants', [gw]);
    expect(gw.internalErrors).toEqual([]);
    await gw.close();
  });

  const token = (fields: Fields, authorization = APP1): Promise<Answer> =>
    gw.send({
      method: 'POST',
      path: '/apigateway/token',
      headers: { authorization, 'content-type': FORM },
      body: formOf(fields),
    });
  const api = (accessToken: string): Promise<Answer> =>
    gw.send({ method: 'POST', path: '/sim-swap/check', headers: { authorization: `Bearer ${accessToken}` } });
  const expectToken = (answer: Answer, scope: string): string => {
    expectJsonEndpointAnswer(answer, TOKEN_ERRORS, () => undefined);
    expect(answer.status, answer.text).toBe(200);
    const body = JSON.parse(answer.text) as { access_token: string; scope: string };
    expect(body.scope).toBe(scope);
    return body.access_token;
  };
  const expectError = (answer: Answer, error: string): void => {
    expectJsonEndpointAnswer(answer, TOKEN_ERRORS, () => undefined);
    expect(JSON.parse(answer.text).error, answer.text).toBe(error);
  };

  it('authorization code: wrong redemptions get the modelled error and burn nothing; the right one works once; a replay revokes', async () => {
    type Wrong = {
      kind: string;
      error: string;
      apply: (f: Fields, pkce: boolean) => { fields: Fields; auth?: string };
    };
    const replace = (f: Fields, name: string, value: string | undefined): Fields =>
      value === undefined
        ? f.filter(([n]) => n !== name)
        : f.some(([n]) => n === name)
          ? f.map(([n, v]) => [n, n === name ? value : v])
          : [...f, [name, value]];
    const codeOf = (f: Fields) => f.find(([n]) => n === 'code')![1];
    const wrong: fc.Arbitrary<Wrong> = fc.oneof(
      fc.constantFrom('x', 'A', '=', ' ', '\u00e9').map((c) => ({
        kind: 'code+',
        error: 'invalid_grant',
        apply: (f: Fields) => ({ fields: replace(f, 'code', codeOf(f) + c) }),
      })),
      fc.constant({
        kind: 'code-1',
        error: 'invalid_grant',
        apply: (f: Fields) => ({ fields: replace(f, 'code', codeOf(f).slice(1)) }),
      }),
      fc.constant({
        kind: 'CODE',
        error: 'invalid_grant',
        apply: (f: Fields) => ({ fields: replace(f, 'code', codeOf(f).toUpperCase()) }),
      }),
      fc
        .constantFrom(`${CALLBACK}/`, CALLBACK.toUpperCase(), `${CALLBACK}?`, 'https://two.example/cb', `${CALLBACK}#`)
        .map((uri) => ({
          kind: `redirect ${uri}`,
          error: 'invalid_grant',
          apply: (f: Fields) => ({ fields: replace(f, 'redirect_uri', uri) }),
        })),
      fc.constantFrom('a'.repeat(43), 'short', 'b'.repeat(128), '~'.repeat(43)).map((v) => ({
        kind: `verifier ${v}`,
        error: 'invalid_grant',
        apply: (f: Fields) => ({ fields: replace(f, 'code_verifier', v) }), // wrong, malformed, or a downgrade
      })),
      fc.constant({
        kind: 'no verifier',
        error: 'invalid_grant',
        apply: (f: Fields, pkce: boolean) => ({
          fields: pkce ? replace(f, 'code_verifier', undefined) : replace(f, 'code', `${codeOf(f)}x`),
        }),
      }),
      fc.constant({
        kind: 'other client',
        error: 'invalid_grant',
        apply: (f: Fields) => ({ fields: f, auth: CODE_ONLY }),
      }),
      fc.constant({
        kind: 'ciba-only client',
        error: 'unauthorized_client',
        apply: (f: Fields) => ({ fields: f, auth: APP2 }),
      }),
      fc.constant({
        kind: 'wrong secret',
        error: 'invalid_client',
        apply: (f: Fields) => ({ fields: f, auth: basic('app-1', 'nope') }),
      }),
      fc.constantFrom('code', 'redirect_uri', 'grant_type').map((name) => ({
        kind: `${name} missing`,
        error: 'invalid_request',
        apply: (f: Fields) => ({ fields: replace(f, name, undefined) }),
      })),
      fc.constantFrom('code', 'redirect_uri', 'grant_type', 'code_verifier').map((name) => ({
        kind: `${name} twice`,
        error: 'invalid_request',
        apply: (f: Fields) => {
          const present = f.find(([n]) => n === name);
          const fields: Fields = present ? [...f, present] : [...f, [name, 'x'], [name, 'x']];
          return { fields };
        },
      })),
      fc.constantFrom('password', 'urn:x', 'AUTHORIZATION_CODE').map((g) => ({
        kind: `grant_type ${g}`,
        error: 'unsupported_grant_type',
        apply: (f: Fields) => ({ fields: replace(f, 'grant_type', g) }),
      })),
      // Grants the gateway has but app-1 is not registered for.
      fc.constantFrom('refresh_token', 'client_credentials').map((g) => ({
        kind: `grant_type ${g}`,
        error: 'unauthorized_client',
        apply: (f: Fields) => ({ fields: replace(f, 'grant_type', g) }),
      })),
    );

    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(wrong, { maxLength: 5 }), async (withPkce, attempts) => {
        const { verifier, challenge } = pkcePair();
        const query = new URLSearchParams({
          response_type: 'code',
          client_id: 'app-1',
          redirect_uri: CALLBACK,
          scope: SIM_SWAP,
          state: 's',
        });
        if (withPkce) {
          query.set('code_challenge', challenge);
          query.set('code_challenge_method', 'S256');
        }
        const authorized = await gw.send({
          method: 'GET',
          path: `/apigateway/authorize?${query}`,
          headers: { 'x-forwarded-for': ALICE_IP },
        });
        expect(authorized.status).toBe(302);
        const code = new URL(authorized.headers.location!).searchParams.get('code')!;
        const right: Fields = [
          ['grant_type', 'authorization_code'],
          ['code', code],
          ['redirect_uri', CALLBACK],
        ];
        if (withPkce) right.push(['code_verifier', verifier]);

        for (const attempt of attempts) {
          const { fields, auth } = attempt.apply(right, withPkce);
          const answer = await token(fields, auth);
          expectError(answer, attempt.error);
          expect(answer.status).toBe(attempt.error === 'invalid_client' ? 401 : 400);
        }
        const accessToken = expectToken(await token(right), SIM_SWAP);
        expect((await api(accessToken)).status).toBe(200);
        // A retry within lifetimes.redemptionRetry (30 s) gets the same token; a replay after it is refused, and
        // the token issued from the code is revoked.
        expect(expectToken(await token(right), SIM_SWAP)).toBe(accessToken);
        gw.clock.advance(31);
        expectError(await token(right), 'invalid_grant');
        const revoked = await api(accessToken);
        expect(revoked.status).toBe(401);
        expect(revoked.headers['www-authenticate']).toMatch(/error="invalid_token"/);
      }),
      { numRuns: 50 },
    );
  });

  it('CIBA: polls at generated times follow the pending / slow_down / expired / denied / token model', async () => {
    type Step = { wait: number; event: 'poll' | 'grant' | 'deny' };
    const step: fc.Arbitrary<Step> = fc.record({
      wait: fc.oneof(
        { weight: 8, arbitrary: fc.integer({ min: 0, max: 9 }) },
        { weight: 1, arbitrary: fc.constantFrom(1.999, 2, 7, 7.001, 60, 121) },
      ),
      event: fc.oneof(
        { weight: 6, arbitrary: fc.constant('poll' as const) },
        { weight: 1, arbitrary: fc.constantFrom('grant' as const, 'deny' as const) },
      ),
    });
    const scenario = fc.record({
      scope: fc.constantFrom(SIM_SWAP, LOCATION),
      steps: fc.array(step, { minLength: 1, maxLength: 8 }),
    });
    const subject = { clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION };

    await fc.assert(
      fc.asyncProperty(scenario, async ({ scope, steps }) => {
        const started = await gw.send({
          method: 'POST',
          path: '/apigateway/bc-authorize',
          headers: { authorization: APP1, 'content-type': FORM },
          body: formOf([
            ['login_hint', 'tel:+34600000001'],
            ['scope', scope],
          ]),
        });
        expect(started.status).toBe(200);
        const id = JSON.parse(started.text).auth_req_id as string;
        const created = gw.clock.now;

        // The model.
        let interval = 2_000;
        let last: number | undefined;
        let consent: 'none' | 'granted' | 'denied' = 'none';
        let used: { at: number; token: string; live: boolean } | undefined;
        const needsConsent = scope === LOCATION;
        try {
          for (const { wait, event } of steps) {
            gw.clock.advance(wait);
            if (event === 'grant' || event === 'deny') {
              await gw.netauth.consent[event](subject);
              consent = event === 'grant' ? 'granted' : 'denied';
              continue;
            }
            // Another client's poll, or a changed id, is never more than invalid_grant and changes nothing.
            expectError(
              await token(
                [
                  ['grant_type', CIBA],
                  ['auth_req_id', id],
                ],
                APP2,
              ),
              'invalid_grant',
            );
            expectError(
              await token([
                ['grant_type', CIBA],
                ['auth_req_id', `${id}x`],
              ]),
              'invalid_grant',
            );

            const answer = await token([
              ['grant_type', CIBA],
              ['auth_req_id', id],
            ]);
            const now = gw.clock.now;
            // Expired requests are remembered for expiredRetention (600 s) to say so; then they are unknown.
            // The client's retry within lifetimes.redemptionRetry (30 s) gets the same token while it lives.
            if (used?.live && now < used.at + 30_000) expect(expectToken(answer, scope)).toBe(used.token);
            else if (used || now >= created + 720_000) expectError(answer, 'invalid_grant');
            else if (now >= created + 120_000) expectError(answer, 'expired_token');
            else if (!needsConsent || consent === 'granted') {
              const accessToken = expectToken(answer, scope);
              // A token under consent dies below, with the consent.
              used = { at: now, token: accessToken, live: !needsConsent };
              if (needsConsent) {
                // Withdrawing the consent revokes the token issued under it.
                const loc = () =>
                  gw.send({ method: 'GET', path: '/location', headers: { authorization: `Bearer ${accessToken}` } });
                expect((await loc()).status).toBe(200);
                await gw.netauth.consent.revoke(subject);
                consent = 'none';
                expect((await loc()).status).toBe(401);
              }
            } else if (consent === 'denied') {
              expectError(answer, 'access_denied');
              expect(answer.status).toBe(400);
            } else {
              const tooSoon = last !== undefined && now - last < interval;
              if (tooSoon) interval += 5_000;
              last = now;
              expectError(answer, tooSoon ? 'slow_down' : 'authorization_pending');
            }
          }
        } finally {
          await gw.netauth.consent.revoke(subject);
        }
      }),
      { numRuns: 80 },
    );
  });

  it('keeps serving: after the generated sequences a fresh code and a fresh CIBA request still get tokens', async () => {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'app-1',
      redirect_uri: CALLBACK,
      scope: SIM_SWAP,
    });
    const authorized = await gw.send({
      method: 'GET',
      path: `/apigateway/authorize?${query}`,
      headers: { 'x-forwarded-for': ALICE_IP },
    });
    const code = new URL(authorized.headers.location!).searchParams.get('code')!;
    expectToken(
      await token([
        ['grant_type', 'authorization_code'],
        ['code', code],
        ['redirect_uri', CALLBACK],
      ]),
      SIM_SWAP,
    );
    const started = await gw.send({
      method: 'POST',
      path: '/apigateway/bc-authorize',
      headers: { authorization: APP1, 'content-type': FORM },
      body: formOf([
        ['login_hint', 'tel:+34600000001'],
        ['scope', SIM_SWAP],
      ]),
    });
    expectToken(
      await token([
        ['grant_type', CIBA],
        ['auth_req_id', JSON.parse(started.text).auth_req_id],
      ]),
      SIM_SWAP,
    );
  });
});
