import { describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import { createContext } from '../../../lib/gateway/context.js';
import { createRouter } from '../../../lib/gateway/router.js';
import { createGuard } from '../../../lib/guard/guard.js';
import { APP1, CLIENTS, ISSUER, LOCATION, POLICY, SIM_SWAP, SUBSCRIBERS } from '../../helpers/gateway.js';
import { pollToken, startBackchannel } from '../../helpers/requests.js';
import { KEY_A } from '../../helpers/keys.js';
import {
  MemoryStore,
  StoreUnavailableError,
  type JsonObject,
  type PutOptions,
  type RecordKind,
  type Store,
} from '../../../lib/index.js';

/** A real memory store whose writes of revocation-list entries fail, as a store outage would. */
class FailingRevokedWrites extends MemoryStore {
  override async put(kind: RecordKind, id: string, value: JsonObject, options: PutOptions): Promise<void> {
    if (kind === 'revoked') throw new StoreUnavailableError('down');
    return super.put(kind, id, value, options);
  }
}

/**
 * `ctx.revocations.revokeGrants([grantId])` is what the authorization-code grant calls on a replayed code: every token
 * issued under the grant must fail at once, opaque or JWT.
 */
describe.each(['opaque', 'jwt'] as const)('revokeGrant, %s access tokens', (format) => {
  function gateway(store?: Store) {
    const now = 1_800_000_000_000;
    const ctx = createContext({
      ...(store ? { store } : {}),
      issuer: ISSUER,
      clients: CLIENTS,
      subscribers: SUBSCRIBERS,
      consentPolicy: POLICY,
      now: () => now,
      accessTokenFormat: format,
      signingKeys: [KEY_A],
      pairwiseSalt: 'salt',
    });
    const app = express();
    app.use('/apigateway', createRouter(ctx));
    app.get('/location', createGuard(ctx, { scope: 'device-location' }), (_req, res) => void res.json({}));
    app.post('/sim-swap/check', createGuard(ctx, { scope: 'sim-swap' }), (_req, res) => void res.json({}));
    return { ctx, app };
  }

  it('revokes every token issued under the grant, at the guard and at introspection, and only those', async () => {
    const { ctx, app } = gateway();
    const [record] = await ctx.consent.grant(
      {
        clientId: 'app-1',
        subscriberId: 'sub-alice',
        purpose: 'FraudPreventionAndDetection',
        scopes: ['device-location'],
      },
      { method: 'out_of_band' },
    );
    const token = async (scope: string) =>
      (await pollToken(app, await startBackchannel(app, 'tel:+34600000001', scope))).body.access_token as string;
    const underGrant = [await token(LOCATION), await token(LOCATION)];
    const unrelated = await token(SIM_SWAP);
    for (const t of underGrant)
      expect((await request(app).get('/location').set('Authorization', `Bearer ${t}`)).status).toBe(200);

    await ctx.revocations.revokeGrants([record!.grantId]);

    for (const t of underGrant) {
      expect((await request(app).get('/location').set('Authorization', `Bearer ${t}`)).status).toBe(401);
      const introspection = await request(app)
        .post('/apigateway/introspect')
        .set('Authorization', APP1)
        .type('form')
        .send({ token: t });
      expect(introspection.body).toEqual({ active: false });
    }
    expect((await request(app).post('/sim-swap/check').set('Authorization', `Bearer ${unrelated}`)).status).toBe(200);
    // Recorded in the store too, for other instances.
    expect(await ctx.store.get('revoked', `grant:${record!.grantId}`)).toBeDefined();
  });

  it('a failing list write is reported, yet this instance refuses the tokens and their records are gone', async () => {
    const { ctx, app } = gateway(new FailingRevokedWrites({ now: () => 1_800_000_000_000 }));
    const [record] = await ctx.consent.grant(
      {
        clientId: 'app-1',
        subscriberId: 'sub-alice',
        purpose: 'FraudPreventionAndDetection',
        scopes: ['device-location'],
      },
      { method: 'out_of_band' },
    );
    const t = (await pollToken(app, await startBackchannel(app, 'tel:+34600000001', LOCATION))).body
      .access_token as string;
    await expect(ctx.revocations.revokeGrants([record!.grantId])).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await request(app).get('/location').set('Authorization', `Bearer ${t}`)).status).toBe(401);
    const introspection = await request(app)
      .post('/apigateway/introspect')
      .set('Authorization', APP1)
      .type('form')
      .send({ token: t });
    expect(introspection.body).toEqual({ active: false });
  });
});
