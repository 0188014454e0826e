import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import express, { type Express, type RequestHandler } from 'express';
import request from 'supertest';
import { createContext, type GatewayContext } from '../../lib/gateway/context.js';
import { createRouter } from '../../lib/gateway/router.js';
import { createGuard, type GuardCheck, type GuardOptions } from '../../lib/guard/guard.js';
import { VerifiedAccessTokens } from '../../lib/guard/verified-access-tokens.js';
import { OAuthError } from '../../lib/errors.js';
import { APP1, CIBA, CLIENTS, ISSUER, POLICY, SIM_SWAP, SUBSCRIBERS } from '../helpers/gateway.js';
import { startBackchannel } from '../helpers/requests.js';
import { KEY_A } from '../helpers/keys.js';
import { handProof, proofKey, type ProofKey } from '../helpers/dpop.js';
import { report } from './support.js';

/**
 * Issue 45: the guard's checks are one list, run by a loop that answers in the request's turn until a check needs
 * I/O (an I/O check's `skips` says when it would pass without any). Here random tokens and requests go through
 * that loop and through the reference execution (every check awaited, none skipped), on the same gateway, and
 * both must answer the same: status, body and challenge. A single-use token is spent by its first call, so each
 * execution gets a fresh one and is called with it twice (the second call must be refused in both). The self-test adds an I/O check whose `skips` lies (a check
 * the old `needsIo` forgot) and shows the property catches it.
 */

const ORIGIN = new URL(ISSUER).origin;
const ROUTES: readonly GuardOptions[] = [
  { scope: 'sim-swap' },
  { scope: 'device-location' },
  { scope: 'sim-swap', purpose: 'Marketing' },
  { subscriber: 'optional' },
  { scope: 'sim-swap', revocation: 'store' },
  { scope: 'sim-swap', errorFormat: 'camara', device: true },
  { scope: 'sim-swap', errorFormat: 'camara', device: { identifier: 'phoneNumber', confirm: true } },
  { scope: 'number-verification' },
  { scope: 'number-verification', errorFormat: 'camara', device: { identifier: 'phoneNumber', confirm: true } },
];

/** Number Verification's tokens are good for one call (the scope's policy rule). */
const SINGLE_USE = 'dpv:RequestedServiceProvision#number-verification';
const RULES = POLICY.map((rule) =>
  rule.scope === 'number-verification' ? { ...rule, singleUseAccessToken: true } : rule,
);

type Amend = (checks: readonly GuardCheck[]) => readonly GuardCheck[];

/** Every route twice, `/same/<i>` and `/async/<i>`: one guard per execution, over the same context. */
function mount(app: Express, ctx: GatewayContext, prefix: string, amend?: Amend): void {
  const verified = new VerifiedAccessTokens(ctx.now);
  const answer: RequestHandler = (req, res) =>
    void res.json({ grant: req.netauth ?? null, locals: (res.locals as { netauth?: unknown }).netauth ?? null });
  ROUTES.forEach((options, i) => {
    for (const execution of ['same', 'async'] as const) {
      const guard = createGuard(ctx, options, verified, {
        execution: execution === 'same' ? 'same-turn' : 'async',
        ...(amend ? { amend } : {}),
      });
      app.post(`${prefix}/${execution}/${i}`, guard, answer);
    }
  });
}

describe.each(['jwt', 'opaque'] as const)('the guard answers the same in the same turn and awaited (%s)', (format) => {
  let clock = 1_800_000_000_000;
  let ctx: GatewayContext;
  let app: Express;
  let key: ProofKey;
  let tokens: string[];
  let tried = 0;

  async function issue(login: string, dpop: boolean, scope = SIM_SWAP): Promise<string> {
    const id = await startBackchannel(app, login, scope);
    const req = request(app).post('/apigateway/token').set('Authorization', APP1).type('form');
    if (dpop)
      req.set('DPoP', await handProof({ key, htm: 'POST', htu: `${ISSUER}/token`, iat: Math.floor(clock / 1000) }));
    const res = await req.send({ grant_type: CIBA, auth_req_id: id });
    expect(res.status, res.text).toBe(200);
    return res.body.access_token as string;
  }

  beforeAll(async () => {
    key = await proofKey('ES256');
    ctx = createContext({
      issuer: ISSUER,
      clients: CLIENTS,
      subscribers: SUBSCRIBERS,
      consentPolicy: RULES,
      now: () => clock,
      accessTokenFormat: format,
      signingKeys: [KEY_A],
      pairwiseSalt: 'salt',
      rateLimits: false,
    });
    app = express();
    app.use('/apigateway', createRouter(ctx));
    mount(app, ctx, '');
    mount(app, ctx, '/unequal', (checks) => [
      ...checks,
      {
        name: 'forgotten',
        io: true,
        skips: () => true,
        run: async () => new OAuthError('invalid_token', 'the check the same-turn path forgot'),
      },
    ]);
    // Expired by now: issued a day ago, when the clock said so.
    const expired = await issue('tel:+34600000001', false);
    clock += 86_400_000;
    const alice = await issue('tel:+34600000001', false);
    const bob = await issue('tel:+34600000002', false);
    const bound = await issue('tel:+34600000001', true);
    const revoked = await issue('tel:+34600000002', false);
    await revoke(revoked);
    tokens = [alice, bob, bound, expired, revoked, `${alice.slice(0, -2)}AA`, 'not-a-token', `${bound}x`];
  });
  afterAll(() => {
    report(`guard-admission ${format}`, [{ tried }]);
  });

  /** Revoked by its client (RFC 7009), on this instance. */
  async function revoke(token: string): Promise<void> {
    const res = await request(app)
      .post('/apigateway/revoke')
      .set('Authorization', APP1)
      .type('form')
      .send({ token, token_type_hint: 'access_token' });
    expect(res.status).toBe(200);
  }

  const requests = fc.record({
    // Mostly live tokens (Alice's, Bob's, Alice's DPoP-bound one, a fresh single-use one: 8), then expired,
    // revoked, forged and malformed.
    token: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(0, 1, 2, 8) },
      { weight: 1, arbitrary: fc.integer({ min: 3, max: 7 }) },
    ),
    scheme: fc.constantFrom('Bearer', 'DPoP', 'bearer', 'dpop'),
    proof: fc.oneof(
      { weight: 3, arbitrary: fc.constant('good') },
      { weight: 1, arbitrary: fc.constantFrom('none', 'wrong-htu', 'no-ath') },
    ),
    route: fc.nat(ROUTES.length - 1),
    body: fc.constantFrom(
      undefined,
      { device: { phoneNumber: '+34600000001' } },
      { device: { phoneNumber: '+34600000002' } },
      { phoneNumber: '+34600000001' },
      { phoneNumber: '+34600000003' },
      { device: {} },
      '[1, 2]',
      '{"device": ',
    ),
  });
  type Sent = typeof requests extends fc.Arbitrary<infer T> ? T : never;

  async function send(prefix: string, execution: 'same' | 'async', sent: Sent, token: string) {
    tried += 1;
    const path = `${prefix}/${execution}/${sent.route}`;
    const req = request(app).post(path).set('Authorization', `${sent.scheme} ${token}`);
    if (sent.proof !== 'none') {
      const proof = await handProof({
        key,
        htm: 'POST',
        htu: sent.proof === 'wrong-htu' ? `${ORIGIN}/elsewhere` : `${ORIGIN}${path}`,
        iat: Math.floor(clock / 1000),
        ...(sent.proof === 'no-ath' ? {} : { accessToken: token }),
      });
      req.set('DPoP', proof);
    }
    const res = sent.body === undefined ? await req : await req.type('json').send(sent.body);
    return { status: res.status, body: res.text, challenge: res.headers['www-authenticate'] ?? null };
  }

  async function same(prefix: string, sent: Sent): Promise<boolean> {
    const answers = async (execution: 'same' | 'async') => {
      if (sent.token !== 8) return [await send(prefix, execution, sent, tokens[sent.token]!)];
      const token = await issue('tel:+34600000001', false, SINGLE_USE);
      return [await send(prefix, execution, sent, token), await send(prefix, execution, sent, token)];
    };
    const inTurn = await answers('same');
    const awaited = await answers('async');
    for (const answer of inTurn) expect(answer.status).toBeLessThan(500);
    return JSON.stringify(inTurn) === JSON.stringify(awaited);
  }

  it('random tokens and requests: the same status, body and challenge', async () => {
    await fc.assert(
      fc.asyncProperty(requests, async (sent) => {
        expect(await same('', sent)).toBe(true);
      }),
      { numRuns: 120 },
    );
  });

  it('self-test: an I/O check whose skips lies makes the property fail', async () => {
    const result = await fc.check(
      fc.asyncProperty(requests, (sent) => same('/unequal', sent)),
      { numRuns: 120 },
    );
    expect(result.failed).toBe(true);
  });
});
