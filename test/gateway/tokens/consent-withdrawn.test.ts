import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { APP1, LOCATION, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { KEY_A } from '../../helpers/keys.js';
import { CALLBACK, authorize, callback, redeem } from '../../helpers/frontend.js';
import {
  MemoryStore,
  type JsonObject,
  type NetAuthOptions,
  type PutOptions,
  type RecordKind,
  type RecordWrite,
} from '../../../lib/index.js';

/**
 * Consent withdrawn while a token is being issued: a CIBA poll (or a code redemption) read the consent as
 * granted, then `consent.revoke()` ran to its end, then the token was written. A token issued under a consent
 * revoked before or during its issue never works, opaque or JWT, and the guard and introspection agree on
 * every instance sharing the store.
 */

const ALICE = 'tel:+34600000001';
const CONSENT = { clientId: 'app-1', login_hint: ALICE, scope: LOCATION };

/**
 * A real memory store that runs `beforeTokenWrite` once, just before the next access-token record is written
 * (by `put`, or by the `consume` that exchanges a code or auth_req_id for the token in the same step).
 */
class RacingStore extends MemoryStore {
  beforeTokenWrite: (() => Promise<void>) | undefined;

  private async race(writesToken: boolean): Promise<void> {
    const hook = writesToken ? this.beforeTokenWrite : undefined;
    if (hook) this.beforeTokenWrite = undefined;
    if (hook) await hook();
  }

  override async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    await this.race(kind === 'access_token');
    return super.put(kind, id, value, options);
  }

  override async consume(kind: RecordKind, id: string, writes: readonly RecordWrite[] = []): Promise<boolean> {
    await this.race(writes.some((w) => w.kind === 'access_token'));
    return super.consume(kind, id, writes);
  }
}

const FORMATS: Array<[string, Partial<NetAuthOptions>]> = [
  ['opaque', {}],
  ['jwt', { accessTokenFormat: 'jwt', signingKeys: [KEY_A], pairwiseSalt: 'salt' }],
];

/** Two gateway instances on one store, as behind a load balancer: `a` withdraws the consent, `b` issues. */
function instances(options: Partial<NetAuthOptions>): { a: TestGateway; b: TestGateway; store: RacingStore } {
  const store = new RacingStore({ now: () => 1_800_000_000_000 });
  return { a: createTestGateway({ ...options, store }), b: createTestGateway({ ...options, store }), store };
}

/** Whatever a token endpoint answered, the token (if any) must not work anywhere, and every check must agree. */
async function expectDead(gws: TestGateway[], token: string | undefined): Promise<void> {
  if (token === undefined) return;
  for (const gw of gws) {
    for (const revocation of ['local', 'store'] as const) {
      gw.app.get(
        `/location-${revocation}`,
        gw.netauth.guard({ scope: 'device-location', revocation }),
        (_req, res) => void res.json({}),
      );
      expect(
        (await request(gw.app).get(`/location-${revocation}`).set('Authorization', `Bearer ${token}`)).status,
      ).toBe(401);
    }
    const introspection = await request(gw.app)
      .post('/apigateway/introspect')
      .set('Authorization', APP1)
      .type('form')
      .send({ token });
    expect(introspection.body).toEqual({ active: false });
  }
}

describe.each(FORMATS)('consent withdrawn while a token is issued (%s access tokens)', (_format, options) => {
  it('CIBA: the poll read the consent as granted, the revocation ran before the token was written: no working token', async () => {
    const { a, b, store } = instances(options);
    await a.netauth.consent.grant(CONSENT);
    const id = await startBackchannel(b.app, ALICE, LOCATION);
    store.beforeTokenWrite = async () => {
      expect(await a.netauth.consent.revoke(CONSENT)).toBe(true);
    };
    const res = await pollToken(b.app, id);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'invalid_grant',
      error_description: 'the consent this grant rests on was withdrawn',
    });
    await expectDead([a, b], res.body.access_token as string | undefined);
    // The request is spent; a new one waits for consent again.
    expect((await pollToken(b.app, id)).body.error).toBe('invalid_grant');
    expect((await pollToken(b.app, await startBackchannel(b.app, ALICE, LOCATION))).body.error).toBe(
      'authorization_pending',
    );
  });

  it('a refusal that supersedes the consent during the issue: likewise', async () => {
    const { a, b, store } = instances(options);
    await a.netauth.consent.grant(CONSENT);
    const id = await startBackchannel(b.app, ALICE, LOCATION);
    store.beforeTokenWrite = async () => {
      await a.netauth.consent.deny(CONSENT);
    };
    const res = await pollToken(b.app, id);
    expect(res.body.error).toBe('invalid_grant');
    await expectDead([a, b], res.body.access_token as string | undefined);
  });

  it("authorization code: consent withdrawn between the code's redemption check and the token write", async () => {
    const { a, b, store } = instances(options);
    await a.netauth.consent.grant(CONSENT);
    const code = callback(await authorize(b.app, { scope: LOCATION })).code!;
    store.beforeTokenWrite = async () => {
      await a.netauth.consent.revoke(CONSENT);
    };
    const res = await redeem(b.app, { code, redirect_uri: CALLBACK });
    expect(res.body.error).toBe('invalid_grant');
    await expectDead([a, b], res.body.access_token as string | undefined);
  });

  it("withdrawn after the issue: the token stops working at both instances' guards and introspection", async () => {
    const { a, b } = instances(options);
    await a.netauth.consent.grant(CONSENT);
    const res = await pollToken(b.app, await startBackchannel(b.app, ALICE, LOCATION));
    expect(res.status).toBe(200);
    await a.netauth.consent.revoke(CONSENT);
    // JWTs on the instance that did not revoke: its guard needs `revocation: 'store'` (docs); `local` would accept
    // the token there until it expires, so only the store-reading guard and introspection are asked there.
    const token = res.body.access_token as string;
    const opaque = options.accessTokenFormat !== 'jwt';
    await expectDead(opaque ? [a, b] : [a], token);
    if (!opaque) {
      b.app.get(
        '/location-shared',
        b.netauth.guard({ scope: 'device-location', revocation: 'store' }),
        (_req, r) => void r.json({}),
      );
      expect((await request(b.app).get('/location-shared').set('Authorization', `Bearer ${token}`)).status).toBe(401);
      expect(
        (await request(b.app).post('/apigateway/introspect').set('Authorization', APP1).type('form').send({ token }))
          .body,
      ).toEqual({ active: false });
    }
  });
});
