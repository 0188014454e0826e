import { hashedRecordId } from '../../lib/crypto.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisStore, type ReplicaShortfall } from '../../lib/stores/redis.js';
import { RedisServer, freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import { ask } from '../helpers/redis-cluster.js';
import { APP2, SIM_SWAP, createTestGateway } from '../helpers/gateway.js';
import { only } from '../helpers/rate-limits.js';
import { CALLBACK, callApi, codeFor, redeem } from '../helpers/frontend.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';

/**
 * Issue 31: waiting for replicas never costs availability. One master and one replica: with the replica killed
 * (no failover), writes go on and succeed, the store stops waiting for the dead replica and says so once. And
 * an approved request or a code whose answer is lost in transit (the consume-and-issue ran, its reply came after
 * the store's deadline): the client got 503, and its retry gets the one token that step stored (issue 47).
 */

const skip = skipRedisTests('the Redis durability tests');
const ALICE = 'tel:+34600000001';
// Many flows of one subscriber: far past the default per-subscriber limits.
const NO_LIMITS = only({});

/** How many times `server` has run `command` (INFO commandstats). */
async function calls(server: RedisServer, command: string): Promise<number> {
  const stats = String(await ask(server, ['INFO', 'commandstats']));
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

async function onlineReplicas(server: RedisServer): Promise<number> {
  return (String(await ask(server, ['INFO', 'replication'])).match(/^slave\d+:.*state=online/gm) ?? []).length;
}

describe.skipIf(skip)('Redis durability waits', () => {
  let master: RedisServer;
  let replica: RedisServer;

  beforeAll(async () => {
    requireRedisServer();
    master = await RedisServer.start({ args: () => ['--repl-diskless-sync-delay', '0'] });
    replica = await RedisServer.start({ args: () => ['--replicaof', '127.0.0.1', String(master.port)] });
    await vi.waitFor(async () => expect(await onlineReplicas(master)).toBe(1), { timeout: 10_000, interval: 25 });
  });

  afterAll(async () => {
    await replica?.destroy();
    await master?.destroy();
  });

  it('a replica killed, no failover: every flow succeeds; the store stops waiting for it, says so once', async () => {
    const shortfalls: ReplicaShortfall[] = [];
    const onReplicaShortfall = (s: ReplicaShortfall) => void shortfalls.push(s);
    // A loaded test machine may take longer than the default 100 ms to replicate a write.
    const store = new RedisStore({ url: master.url, prefix: freshPrefix(), onReplicaShortfall, replicaWait: 2000 });
    const gw = createTestGateway({ store, rateLimits: NO_LIMITS });
    const flow = async () => {
      const authReqId = await startBackchannel(gw.app, ALICE, SIM_SWAP);
      const token = (await pollToken(gw.app, authReqId)).body.access_token as string;
      expect((await callApi(gw.app, token)).status).toBe(200);
      return token;
    };
    try {
      await store.open();
      const waitsBefore = await calls(master, 'wait');
      const before = [];
      for (let i = 0; i < 5; i++) before.push(await flow());
      // Each write waited for the replica, and the replica confirmed each.
      expect(await calls(master, 'wait')).toBeGreaterThan(waitsBefore);
      expect(shortfalls).toEqual([]);

      await replica.stop();
      const waitsAtKill = await calls(master, 'wait');
      for (let i = 0; i < 20; i++) await flow();
      // One write found the replica gone; the later ones no longer waited for it (a WAIT holds its connection).
      expect(shortfalls).toEqual([{ node: '', expected: 1, acknowledged: 0 }]);
      expect(await calls(master, 'wait')).toBeLessThanOrEqual(waitsAtKill + 1);
      expect(store.replicaShortfalls).toBeLessThanOrEqual(1);
      for (const token of before) expect((await callApi(gw.app, token)).status).toBe(200);

      // The replica back: the store reads the topology again on its next check and waits for it again.
      await replica.restart();
      await vi.waitFor(async () => expect(await onlineReplicas(master)).toBe(1), { timeout: 10_000, interval: 25 });
    } finally {
      await gw.netauth.close();
      await store.close();
    }
    // A fresh store sees the replica at once.
    const fresh = new RedisStore({ url: master.url, prefix: freshPrefix(), onReplicaShortfall, replicaWait: 2000 });
    try {
      await fresh.open();
      const waits = await calls(master, 'wait');
      await fresh.put('code', 'Ab.1', { v: 1 }, { ttl: 60 });
      expect(await calls(master, 'wait')).toBe(waits + 1);
      expect(fresh.replicaShortfalls).toBe(0);
    } finally {
      await fresh.close();
    }
  });

  /** A store whose replies come after its deadline while `master` pauses writes: a flow's consume-and-issue is "lost". */
  async function lateReplies() {
    const prefix = freshPrefix();
    const store = new RedisStore({ url: master.url, prefix, timeout: 300, waitForReplicas: 0 });
    const gw = createTestGateway({ store, rateLimits: NO_LIMITS });
    const events: string[] = [];
    gw.netauth.events.on('redemption.unsettled', (_e, name) => void events.push(name));
    gw.netauth.events.on('redemption.redelivered', (_e, name) => void events.push(name));
    await store.open();
    return { prefix, store, gw, events };
  }

  /** The one access token a grant's index lists, after the paused script ran. */
  async function tokensOfGrant(prefix: string, kind: 'b' | 'c', id: string): Promise<number> {
    const [tag, rest] = hashedRecordId(id).split('.') as [string, string]; // stored under its hash
    const stored = String(await ask(master, ['GET', `${prefix}${kind}.{${tag}}${rest}`]));
    const grantId = (JSON.parse(stored.slice(stored.indexOf('\n') + 1)) as { grantId: string }).grantId;
    const index = `${prefix}g.{${tag}}${grantId.slice(tag.length + 1)}`;
    const members = (await ask(master, ['ZRANGE', index, '0', '-1'])) as string[];
    return members.filter((m) => m.startsWith('t.')).length;
  }

  /** Waits until the record of `id` is consumed (the paused script ran after its reply was given up on). */
  async function consumedLate(prefix: string, kind: 'b' | 'c', id: string): Promise<void> {
    const [tag, rest] = hashedRecordId(id).split('.') as [string, string];
    const key = `${prefix}${kind}.{${tag}}${rest}`;
    const flag = async () => String(await ask(master, ['GET', key]))[0];
    await vi.waitFor(async () => expect(await flag()).toBe('1'), { timeout: 5_000, interval: 25 });
  }

  it('an approved poll whose reply came after the deadline (503): the retry gets its token, 50 retries the same one', async () => {
    const { prefix, store, gw, events } = await lateReplies();
    try {
      const authReqId = await startBackchannel(gw.app, ALICE, SIM_SWAP);
      // Writes (the consume-and-issue script) wait on the server past the store's deadline, then run.
      await ask(master, ['CLIENT', 'PAUSE', '700', 'WRITE']);
      const lost = await pollToken(gw.app, authReqId);
      expect([lost.status, lost.body.error]).toEqual([503, 'temporarily_unavailable']);
      await consumedLate(prefix, 'b', authReqId);

      const retried = await pollToken(gw.app, authReqId);
      expect(retried.status).toBe(200);
      const token = retried.body.access_token as string;
      expect((await callApi(gw.app, token)).status).toBe(200);
      // Another client presenting it learns nothing; the owner's 50 parallel retries all get the one token.
      expect((await pollToken(gw.app, authReqId, APP2)).body.error).toBe('invalid_grant');
      const again = await Promise.all(Array.from({ length: 50 }, () => pollToken(gw.app, authReqId)));
      expect(new Set(again.map((r) => r.body.access_token))).toEqual(new Set([token]));
      expect(await tokensOfGrant(prefix, 'b', authReqId)).toBe(1);
      expect(events.slice(0, 2)).toEqual(['redemption.unsettled', 'redemption.redelivered']);
    } finally {
      await gw.netauth.close();
      await store.close();
    }
  });

  it('a code redemption whose reply came after the deadline (503): the retry gets its token, not a replay', async () => {
    const { prefix, store, gw } = await lateReplies();
    try {
      const code = await codeFor(gw);
      await ask(master, ['CLIENT', 'PAUSE', '700', 'WRITE']);
      const lost = await redeem(gw.app, { code, redirect_uri: CALLBACK });
      expect([lost.status, lost.body.error]).toEqual([503, 'temporarily_unavailable']);
      await consumedLate(prefix, 'c', code);

      const retried = await redeem(gw.app, { code, redirect_uri: CALLBACK });
      expect(retried.status).toBe(200);
      expect((await callApi(gw.app, retried.body.access_token as string)).status).toBe(200);
      expect(await tokensOfGrant(prefix, 'c', code)).toBe(1);
    } finally {
      await gw.netauth.close();
      await store.close();
    }
  });
});
