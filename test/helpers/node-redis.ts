/**
 * node-redis's factories typed without its default modules (RedisJSON, search, time series, bloom): the tests
 * send plain commands only, and the modules' command types alone cost the type-check about 500 MB. The
 * objects are node-redis's own, modules included.
 */
import * as redis from 'redis';
import type {
  RedisClientOptions,
  RedisClientType,
  RedisClusterOptions,
  RedisClusterType,
  RedisSentinelOptions,
  RedisSentinelType,
} from 'redis';

type None = Record<never, never>;
export type PlainRedisClient = RedisClientType<None, None, None, 2, None>;
export type PlainRedisCluster = RedisClusterType<None, None, None, 2, None>;
export type PlainRedisSentinel = RedisSentinelType<None, None, None, 2, None>;

export const createClient = redis.createClient as unknown as (
  options?: RedisClientOptions<None, None, None, 2, None>,
) => PlainRedisClient;
export const createCluster = redis.createCluster as unknown as (
  options: RedisClusterOptions<None, None, None, 2, None>,
) => PlainRedisCluster;
export const createSentinel = redis.createSentinel as unknown as (
  options: RedisSentinelOptions<None, None, None, 2, None>,
) => PlainRedisSentinel;
