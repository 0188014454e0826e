import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { MemoryStore, type Store } from '../../../lib/index.js';
import { APP1, APP2, CIBA, ISSUER, SIM_SWAP, createTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { startBackchannel } from '../../helpers/requests.js';
import { handProof, proofKey, type ProofKey } from '../../helpers/dpop.js';
import { redisServerMissing, skipRedisTests, useRedisServer } from '../../helpers/redis-server.js';
import { ask } from '../../helpers/redis-cluster.js';
import { wrapStore } from '../../helpers/store-wrapper.js';

/**
 * Issue 32, finding 6: every accepted DPoP proof leaves a replay entry (its `jti`) for up to 605 s, so one key
 * holder's guard calls must not grow the store without bound. rateLimits.dpopProofs.perKey counts fresh proofs per
 * key; a bounded load, counted (answers and the store's replay entries), never timed.
 */

const CAP = 20;
const API_URL = 'http://gateway.test/sim-swap/check';

interface Backend {
  name: string;
  store: () => Store;
  /** Replay entries (`jti` records) in the store now. */
  replayEntries: () => Promise<number>;
}

async function boundToken(gw: TestGateway, key: ProofKey): Promise<string> {
  const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
  const res = await request(gw.app)
    .post('/apigateway/token')
    .set('Authorization', APP1)
    .set('DPoP', await handProof({ key, htm: 'POST', htu: `${ISSUER}/token`, iat: Math.floor(gw.clock.now / 1000) }))
    .type('form')
    .send({ grant_type: CIBA, auth_req_id: id });
  expect(res.body.token_type).toBe('DPoP');
  return res.body.access_token as string;
}

function call(gw: TestGateway, token: string, proof: string) {
  return request(gw.app).post('/sim-swap/check').set('Authorization', `DPoP ${token}`).set('DPoP', proof);
}

const apiProof = (gw: TestGateway, key: ProofKey, token: string) =>
  handProof({ key, htm: 'POST', htu: API_URL, iat: Math.floor(gw.clock.now / 1000), accessToken: token });

function replayBoundTests(backend: () => Backend): void {
  it(`150 fresh proofs of one key leave at most its cap of replay entries; replays by others use none of it`, async () => {
    const { store, replayEntries } = backend();
    const gw = createTestGateway({
      store: store(),
      // Redis counters wait long on a loaded machine: a timeout would count in the process meanwhile (the fallback).
      rateLimits: { timeout: 10_000, dpopProofs: { perKey: { points: CAP, duration: 900 } } },
    });
    const [key, other] = [await proofKey('ES256'), await proofKey('ES256')];
    const before = await replayEntries();
    // The token endpoint's proof is the key's first.
    const token = await boundToken(gw, key);

    // Whoever saw a proof may replay it: refused as a replay, and no part of the key's allowance.
    const seen = await apiProof(gw, key, token);
    expect((await call(gw, token, seen)).status).toBe(200);
    const replays = await Promise.all(Array.from({ length: 50 }, () => call(gw, token, seen)));
    expect(replays.map((r) => r.status)).toEqual(Array(50).fill(401));
    for (const r of replays) expect(r.headers['www-authenticate']).toContain('its jti has been used before');

    const statuses: number[] = [];
    let refused: request.Response | undefined;
    for (let batch = 0; batch < 3; batch++) {
      const proofs = await Promise.all(Array.from({ length: 50 }, () => apiProof(gw, key, token)));
      for (const res of await Promise.all(proofs.map((proof) => call(gw, token, proof)))) {
        statuses.push(res.status);
        if (res.status === 429) refused ??= res;
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(CAP - 2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(150 - (CAP - 2));
    expect(refused!.body.error).toBe('temporarily_unavailable');
    expect(Number(refused!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The key's replay entries grow with its cap, not with its calls; refused proofs leave none.
    expect((await replayEntries()) - before).toBe(CAP);

    // Another key (another holder) is not held back by this one.
    const otherToken = await boundToken(gw, other);
    expect((await call(gw, otherToken, await apiProof(gw, other, otherToken))).status).toBe(200);
    // At the token endpoint the key's proofs are refused as well; a CIBA poll is told to slow down.
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP);
    const polled = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', APP1)
      .set('DPoP', await handProof({ key, htm: 'POST', htu: `${ISSUER}/token`, iat: Math.floor(gw.clock.now / 1000) }))
      .type('form')
      .send({ grant_type: CIBA, auth_req_id: id });
    expect(polled.status).toBe(400);
    expect(polled.body.error).toBe('slow_down');
    expect(Number(polled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it(`issue 42, finding 6: 10 tokens each bound to a fresh key, 150 proofs: the client's entries stop at its cap; another client is served`, async () => {
    const { store, replayEntries } = backend();
    const gw = createTestGateway({
      store: store(),
      rateLimits: { timeout: 10_000, dpopProofs: { perClient: { points: CAP, duration: 900 } } },
    });
    const before = await replayEntries();
    // Each token's first proof (at the token endpoint) counts for the client too: 10 of its CAP.
    const keys = await Promise.all(Array.from({ length: 10 }, () => proofKey('ES256')));
    const tokens = await Promise.all(keys.map((key) => boundToken(gw, key)));
    const statuses: number[] = [];
    const limits: string[] = [];
    gw.netauth.events.on('rate.limited', (e) => limits.push(e.limit));
    for (let batch = 0; batch < 3; batch++) {
      const calls = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const [key, token] = [keys[i % 10]!, tokens[i % 10]!];
          return call(gw, token, await apiProof(gw, key, token));
        }),
      );
      statuses.push(...calls.map((r) => r.status));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(CAP - 10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(150 - (CAP - 10));
    expect(new Set(limits)).toEqual(new Set(['dpop_client']));
    // The client's entries grow with its cap, not with its keys; refused proofs leave none.
    expect((await replayEntries()) - before).toBe(CAP);

    // Another client's keys are not held back by this one's.
    const other = await proofKey('ES256');
    const id = await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP, APP2);
    const res = await request(gw.app)
      .post('/apigateway/token')
      .set('Authorization', APP2)
      .set(
        'DPoP',
        await handProof({ key: other, htm: 'POST', htu: `${ISSUER}/token`, iat: Math.floor(gw.clock.now / 1000) }),
      )
      .type('form')
      .send({ grant_type: CIBA, auth_req_id: id });
    expect(res.body.token_type).toBe('DPoP');
  }, 60_000);
}

describe('DPoP replay entries bounded per key [memory]', () => {
  let memory: MemoryStore;
  /** Every jti record ever written; those the store still holds are the live ones. */
  const written = new Set<string>();
  replayBoundTests(() => ({
    name: 'memory',
    store: () => {
      memory = new MemoryStore();
      return wrapStore(memory, {
        add: async (kind, id, value, options) => {
          const added = await memory.add(kind, id, value, options);
          if (added && kind === 'jti') written.add(id);
          return added;
        },
      });
    },
    replayEntries: async () => {
      const live = await Promise.all([...written].map((id) => memory.get('jti', id)));
      return live.filter((r) => r !== undefined).length;
    },
  }));
});

const skipRedis = skipRedisTests('the DPoP replay bound on Redis');

describe.skipIf(skipRedis)(
  `DPoP replay entries bounded per key [redis]${skipRedis ? ` (skipped: ${redisServerMissing()})` : ''}`,
  () => {
    const redis = useRedisServer();
    let prefix: string;
    replayBoundTests(() => ({
      name: 'redis',
      store: () => {
        const store = redis.store();
        prefix = store.prefix;
        return store;
      },
      // RedisStore keeps a jti record under `<prefix>j`.
      replayEntries: async () => ((await ask(redis.server(), ['KEYS', `${prefix}j*`])) as string[]).length,
    }));
  },
);
