import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSentinel } from '../helpers/node-redis.js';
import { RedisStore } from '../../lib/stores/redis.js';
import { StoreUnavailableError } from '../../lib/stores/store.js';
import { freshPrefix, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';
import { RedisSentinelSet, SENTINEL_MASTER_NAME } from '../helpers/redis-sentinel.js';
import { SIM_SWAP, createTestGateway } from '../helpers/gateway.js';
import { callApi } from '../helpers/frontend.js';
import { pollToken, startBackchannel } from '../helpers/requests.js';
import { describeStoreContract } from './contract.js';

/**
 * RedisStore through a node-redis createSentinel() client on a real Sentinel set-up (one master, one replica,
 * test/helpers/redis-sentinel.ts): the shared contract, and a failover the store comes through by itself with
 * everything it wrote.
 */

const skip = skipRedisTests('the Redis Sentinel tests');

/** The client as docs/redis-store.md sets it up (its snippet is compiled by test/package/docs-examples.test.ts). */
function sentinelClient(set: RedisSentinelSet) {
  const client = createSentinel({
    name: SENTINEL_MASTER_NAME,
    sentinelRootNodes: set.sentinelRootNodes,
    nodeClientOptions: { disableOfflineQueue: true, socket: { connectTimeout: 1000, reconnectStrategy: () => 100 } },
  });
  client.on('error', () => {});
  return client;
}

describe.skipIf(skip)('redis store behind Redis Sentinel', () => {
  let set: RedisSentinelSet;
  let client: ReturnType<typeof sentinelClient>;

  beforeAll(async () => {
    requireRedisServer();
    set = await RedisSentinelSet.start();
    client = sentinelClient(set);
    await client.connect();
  }, 30_000);

  afterAll(async () => {
    await client?.destroy();
    await set?.destroy();
  });

  describeStoreContract('redis sentinel client', async () => {
    const store = new RedisStore({ client, prefix: freshPrefix() });
    await store.open();
    return { store, elapse: (seconds) => sleep(seconds * 1000), close: () => store.close() };
  });

  it('runs a gateway whose rate limits count on the same Sentinel-managed connection', async () => {
    const prefix = freshPrefix();
    const store = new RedisStore({ client, prefix });
    const errors: unknown[] = [];
    const gw = createTestGateway({ store, onError: (error) => errors.push(error) });
    gw.netauth.events.on('rate.fallback', (event) => void errors.push(event));
    try {
      await store.open();
      const token = (await pollToken(gw.app, await startBackchannel(gw.app, 'tel:+34600000001', SIM_SWAP))).body
        .access_token as string;
      expect((await callApi(gw.app, token)).status).toBe(200);
      const counters = (await client.sendCommand(true, ['KEYS', `${prefix}rl:*`])) as string[];
      expect(counters.length).toBeGreaterThan(0);
      expect(errors).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('answers 503 while the master is gone, then works on the promoted replica with everything it wrote, without a restart', {
    timeout: 60_000,
  }, async () => {
    const docs = readFileSync(new URL('../../docs/redis-store.md', import.meta.url), 'utf8');
    expect(docs).toContain('socket: { connectTimeout: 1000, reconnectStrategy: () => 100 }');
    const reported: unknown[] = [];
    const store = new RedisStore({
      client,
      prefix: freshPrefix(),
      timeout: 1000,
      onDataLoss: (error) => reported.push(error),
    });
    try {
      await store.open();
      for (let i = 0; i < 20; i++) await store.put('backchannel', `Sn.${i}`, { i }, { ttl: 120, grants: ['Sn.grant'] });
      expect(await store.consume('backchannel', 'Sn.0')).toBe(true);

      const old = await set.killMaster();
      await expect(store.get('backchannel', 'Sn.1')).rejects.toBeInstanceOf(StoreUnavailableError);
      await set.waitForFailover(old);
      await vi.waitFor(() => store.get('backchannel', 'Sn.1'), { timeout: 30_000, interval: 100 });

      for (let i = 0; i < 20; i++) expect((await store.get('backchannel', `Sn.${i}`))?.value).toEqual({ i });
      expect(await store.consume('backchannel', 'Sn.0')).toBe(false);
      expect(await store.consume('backchannel', 'Sn.1')).toBe(true);
      // The promoted replica has the data: no loss to report.
      expect(reported).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
