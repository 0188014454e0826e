import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { SIM_SWAP } from '../helpers/gateway.js';
import { CAMARA_KEY, FOREIGN_CAMARA_KEY } from '../helpers/client-jwts.js';
import {
  GRANTS_CLIENTS,
  GRANTS_POLICY,
  JWT_BEARER,
  NUMBER_VERIFICATION,
  OFFLINE_AUTH,
  POPULATION,
  SERVICE_AUTH,
  bearerAssertion,
} from '../helpers/grants.js';
import {
  TOKEN_ERRORS,
  expectJsonEndpointAnswer,
  formOf,
  nastyText,
  report,
  startGateway,
  type PropertyGateway,
} from './support.js';

/**
 * The grants beyond the seed's two (refresh_token, client_credentials, the JWT bearer grant) under generated,
 * authenticated, well-framed token requests: every parameter good, missing or hostile, assertions good, foreign,
 * mangled or made of generated claims. Never a 5xx or a stack trace; always no-store; a success has the token
 * response's shape; every error is one of the token endpoint's, `invalid_scope` included.
 */

const CODES = [...TOKEN_ERRORS, 'invalid_scope'];
const ALICE = 'tel:+34600000001';

describe('refresh, client credentials and JWT bearer requests under generated input', () => {
  let gw: PropertyGateway;
  beforeAll(async () => {
    // The real clock: the assertions are signed with it.
    gw = await startGateway({ clients: GRANTS_CLIENTS, consentPolicy: GRANTS_POLICY, now: Date.now });
  });
  afterAll(async () => {
    report('more-grants', [gw]);
    await gw.close();
  });

  const success = (body: Record<string, unknown>) => {
    expect(body).toMatchObject({ token_type: 'Bearer' });
    expect([300, 3600]).toContain(body.expires_in);
    expect(body.access_token).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    expect(typeof body.scope).toBe('string');
    if (body.refresh_token !== undefined) expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
  };

  it("every answer is safe and one of the endpoint’s; the generated requests reach tokens and every grant's errors", async () => {
    const seen = new Map<string, number>();
    const now = () => Math.floor(Date.now() / 1000);
    const scopes = [
      SIM_SWAP,
      POPULATION,
      NUMBER_VERIFICATION,
      `${SIM_SWAP} offline_access`,
      'dpv:Marketing#population-density',
      'dpv:FraudPreventionAndDetection device-location',
      'openid',
      '',
    ];
    const text = (good: readonly string[]) =>
      fc.option(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...good) }, { weight: 2, arbitrary: nastyText }), {
        nil: undefined,
      });
    const claimValue = fc.oneof(
      nastyText,
      fc.integer(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 2 }),
      fc.constant(undefined),
    );
    const assertion = fc.oneof(
      fc
        .record({
          sub: text([ALICE, 'tel:+34699999999', 'operatortoken:x', 'ipport:10.20.0.1']),
          scope: text(scopes),
          key: fc.boolean(),
          extra: fc.dictionary(fc.constantFrom('iss', 'aud', 'exp', 'iat', 'jti', 'nbf'), claimValue, { maxKeys: 2 }),
        })
        .map(async ({ sub, scope, key, extra }) =>
          bearerAssertion(sub ?? '', scope ?? '', {
            now: now(),
            key: key ? CAMARA_KEY : FOREIGN_CAMARA_KEY,
            claims: {
              ...(sub === undefined ? { sub: undefined } : {}),
              ...(scope === undefined ? { scope: undefined } : {}),
              ...extra,
            },
          }),
        ),
      nastyText.map(async (t) => t),
      fc.constant(Promise.resolve('eyJhbGciOiJub25lIn0.eyJpc3MiOiJiYWNrZW5kLWFwcCJ9.')),
    );
    const generated = fc.record({
      grant_type: fc.constantFrom('refresh_token', 'client_credentials', JWT_BEARER),
      auth: fc.constantFrom(OFFLINE_AUTH, SERVICE_AUTH, undefined),
      refresh_token: text(['Ab3dEf_1.unknown', 'x']),
      scope: text(scopes),
      assertion: fc.option(assertion, { nil: undefined }),
      client_id: text(['backend-app', 'offline-app']),
    });
    // Well-made requests now and then, so the deep checks (subscriber, policy, consent) are reached.
    const wellMade = fc.record({
      grant_type: fc.constant(JWT_BEARER),
      auth: fc.constant(undefined),
      refresh_token: fc.constant(undefined),
      scope: fc.constant(undefined),
      assertion: fc
        .constantFrom(SIM_SWAP, NUMBER_VERIFICATION, 'dpv:FraudPreventionAndDetection#device-location')
        .map((scope) => bearerAssertion(ALICE, scope, { now: now() })),
      client_id: fc.constantFrom(undefined, 'backend-app'),
    });
    const twoLegged = fc.record({
      grant_type: fc.constant('client_credentials'),
      auth: fc.constant(SERVICE_AUTH),
      refresh_token: fc.constant(undefined),
      scope: fc.constantFrom(POPULATION, `${POPULATION} offline_access`, SIM_SWAP),
      assertion: fc.constant(undefined),
      client_id: fc.constant(undefined),
    });
    const request = fc.oneof(
      { weight: 5, arbitrary: generated },
      { weight: 1, arbitrary: wellMade },
      { weight: 1, arbitrary: twoLegged },
    );
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const fields: Array<[string, string, boolean]> = [['grant_type', r.grant_type, false]];
        for (const name of ['refresh_token', 'scope', 'client_id'] as const)
          if (r[name] !== undefined) fields.push([name, r[name], false]);
        if (r.assertion !== undefined) fields.push(['assertion', await r.assertion, false]);
        const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
        if (r.auth !== undefined) headers.authorization = r.auth;
        const answer = await gw.send({ method: 'POST', path: '/apigateway/token', headers, body: formOf(fields) });
        // Without client credentials the JWT bearer assertion authenticates: its 401 has no Basic challenge.
        expectJsonEndpointAnswer(answer, CODES, success, r.auth === undefined);
        const outcome = `${r.grant_type} ${answer.status === 200 ? 'ok' : (JSON.parse(answer.text) as { error: string }).error}`;
        seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
      }),
      { numRuns: 500 },
    );
    // Not a check that looked at nothing: tokens were issued, and the grants' own errors were reached.
    for (const outcome of [
      'client_credentials ok',
      'client_credentials invalid_scope',
      `${JWT_BEARER} ok`,
      `${JWT_BEARER} invalid_grant`,
      'refresh_token invalid_grant',
    ]) {
      expect(seen.get(outcome) ?? 0, outcome).toBeGreaterThan(0);
    }
  });
});
