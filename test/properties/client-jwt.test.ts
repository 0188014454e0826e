import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CLIENTS, ISSUER } from '../helpers/gateway.js';
import {
  CAMARA_CLIENT,
  CAMARA_EC_KEY,
  FOREIGN_CAMARA_KEY,
  CAMARA_KEY,
  assertionFields,
  signJwt,
} from '../helpers/client-jwts.js';
import { TOKEN_ERRORS, expectJsonEndpointAnswer, report, startGateway, type PropertyGateway } from './support.js';

/**
 * Client assertions under generated claims: whatever `exp`, `iat`, `nbf`, `aud`, `iss`, `sub`, `jti`, `typ` and
 * key, the gateway accepts exactly the assertions the CAMARA profile's rules accept (a model of docs/protocol.md,
 * written here independently), never answers 5xx, and never accepts one twice.
 */

const RUNS = 300;
const SKEW = 5;

/** Mostly the good value, sometimes one of the others: so both answers are reached often. */
const mostly = <T>(good: T, ...others: T[]): fc.Arbitrary<T> =>
  fc.oneof({ weight: 5, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: fc.constantFrom(...others) });

const claimsAndKey = fc.record({
  exp: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 300 }) },
    { weight: 1, arbitrary: fc.option(fc.integer({ min: -400, max: 400 }), { nil: undefined }) },
  ),
  iat: fc.option(
    fc.oneof(
      { weight: 3, arbitrary: fc.integer({ min: -10, max: 10 }) },
      { weight: 1, arbitrary: fc.integer({ min: -400, max: 400 }) },
    ),
    { nil: undefined },
  ),
  nbf: fc.option(fc.integer({ min: -30, max: 30 }), { nil: undefined, freq: 2 }),
  aud: mostly<unknown>(
    ISSUER,
    `${ISSUER}/token`,
    `${ISSUER}/introspect`,
    `${ISSUER}/revoke`,
    `${ISSUER}/authorize`,
    'https://other.example',
    [ISSUER, 'x'],
    [],
    undefined,
  ),
  iss: mostly<unknown>('aggregator', 'app-1', undefined, 7),
  sub: mostly<unknown>('aggregator', 'app-1', undefined),
  jti: mostly<unknown>('fresh', '', 12, undefined),
  typ: mostly<string | undefined>(undefined, 'JWT', 'client-authentication+jwt', 'oauth-authz-req+jwt', 'dpop+jwt'),
  key: mostly('rsa', 'ec', 'foreign'),
});

type Generated = typeof claimsAndKey extends fc.Arbitrary<infer T> ? T : never;

/** docs/protocol.md, Second edition: when is this assertion good at /introspect? */
function accepted(g: Generated): boolean {
  const audiences = [ISSUER, `${ISSUER}/token`, `${ISSUER}/introspect`];
  const aud = Array.isArray(g.aud) ? g.aud : [g.aud];
  return (
    g.key !== 'foreign' &&
    g.iss === 'aggregator' &&
    g.sub === 'aggregator' &&
    aud.some((a) => audiences.includes(a as string)) &&
    g.exp !== undefined &&
    g.exp > 0 &&
    g.exp <= 300 &&
    (g.iat === undefined || (g.iat <= SKEW && g.exp - g.iat <= 300)) &&
    (g.nbf === undefined || g.nbf <= SKEW) &&
    typeof g.jti === 'string' &&
    g.jti !== '' &&
    [undefined, 'JWT', 'client-authentication+jwt'].includes(g.typ)
  );
}

describe('client assertions under generated claims', () => {
  let gw: PropertyGateway;
  let n = 0;
  beforeAll(async () => {
    gw = await startGateway({ clients: [...CLIENTS, CAMARA_CLIENT] });
  });
  afterAll(async () => {
    report('client-jwt', [gw]);
    await gw.close();
  });

  it('accepted exactly when the profile’s rules hold; a replay is always refused', async () => {
    let acceptedCount = 0;
    await fc.assert(
      fc.asyncProperty(claimsAndKey, async (g) => {
        const now = Math.floor(gw.clock.now / 1000);
        const at = (offset: number | undefined) => (offset === undefined ? undefined : now + offset);
        const jti = g.jti === 'fresh' ? `jti-${n++}` : g.jti;
        const key = g.key === 'rsa' ? CAMARA_KEY : g.key === 'ec' ? CAMARA_EC_KEY : FOREIGN_CAMARA_KEY;
        const assertion = await signJwt(
          { iss: g.iss, sub: g.sub, aud: g.aud, exp: at(g.exp), iat: at(g.iat), nbf: at(g.nbf), jti },
          key,
          g.typ === undefined ? {} : { typ: g.typ },
        );
        const send = () =>
          gw.send({
            method: 'POST',
            path: '/apigateway/introspect',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ token: 'x', ...assertionFields(assertion) }).toString(),
          });
        const first = await send();
        expectJsonEndpointAnswer(first, TOKEN_ERRORS, () => undefined, true);
        expect(first.status, JSON.stringify(g)).toBe(accepted(g) ? 200 : 401);
        if (first.status === 200) {
          acceptedCount++;
          const replay = await send();
          expect(replay.status).toBe(401);
          expect(JSON.parse(replay.text)).toMatchObject({ error: 'invalid_client' });
        }
      }),
      { numRuns: RUNS },
    );
    // The generator must reach both answers, or the property says little.
    expect(acceptedCount).toBeGreaterThan(0);
    expect(gw.internalErrors).toEqual([]);
  });
});
