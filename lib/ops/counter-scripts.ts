/**
 * The Lua scripts of the Redis rate-limit counters (lib/ops/counters.ts). A counter is a STRING holding its
 * count, with the expiry of its window, written exactly as rate-limiter-flexible's RateLimiterRedis writes it
 * (`SET key 0 EX duration NX`, then `INCRBY`): the window starts at a counter's first point. Every key a script
 * touches is in KEYS, and the keys of one call share a hash tag, so on Redis Cluster each call runs on one shard.
 * The commands they run are in the ACL of docs/redis-store.md (`get`, `set`, `incrby`, `pttl`, `expire`).
 */
import { defineScript, type Script } from '../stores/redis-scripts.js';

function script(body: string): Script {
  return defineScript(COMMON, body);
}

// `add`: `points` more on `key`, its window started if it has none; the new count and ms until the window ends.
const COMMON = `
local function add(key, points, duration)
  redis.call('SET', key, 0, 'EX', duration, 'NX')
  local count = redis.call('INCRBY', key, points)
  local ttl = redis.call('PTTL', key)
  if ttl == -1 then
    redis.call('EXPIRE', key, duration)
    ttl = duration * 1000
  end
  return count, ttl
end
`;

/**
 * One request on KEYS[i] (ARGV[2i-1] points, ARGV[2i] duration) in turn, each counted only while every one
 * before it let the request through. Returns {0, 0}, or {i, ms until its window ends} for the first over its points.
 */
export const CHAIN = script(`
for i = 1, #KEYS do
  local count, ttl = add(KEYS[i], 1, tonumber(ARGV[2 * i]))
  if count > tonumber(ARGV[2 * i - 1]) then return {i, ttl} end
end
return {0, 0}
`);

/**
 * Up to ARGV[3] of the points left on KEYS[1] (ARGV[1] points, ARGV[2] duration). None left: one is counted
 * anyway, as a refused request is. Returns {points taken, ms until the window ends}.
 */
export const TAKE = script(`
local points, want = tonumber(ARGV[1]), tonumber(ARGV[3])
local left = points - tonumber(redis.call('GET', KEYS[1]) or '0')
local take = math.max(math.min(want, left), 0)
local _, ttl = add(KEYS[1], math.max(take, 1), tonumber(ARGV[2]))
return {take, ttl}
`);

/**
 * A lock-out slot: KEYS[1] the attempts (refused checks and checks in flight), KEYS[2] the failures, ARGV[1]
 * the budget, ARGV[2] the window. Under the budget: one more attempt, {1, attempts now, ms until the attempts'
 * window ends}. Else nothing changes: {0, failures, ms until the failures' window ends}.
 */
export const RESERVE = script(`
local budget = tonumber(ARGV[1])
if tonumber(redis.call('GET', KEYS[1]) or '0') < budget then
  local count, ttl = add(KEYS[1], 1, tonumber(ARGV[2]))
  return {1, count, ttl}
end
return {0, tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('PTTL', KEYS[2])}
`);

/** A slot given back: one attempt less on KEYS[1], unless its window has ended (the slot went with it). */
export const RELEASE = script(`
local attempts = tonumber(redis.call('GET', KEYS[1]) or '0')
if attempts > 0 then redis.call('INCRBY', KEYS[1], -1) end
return attempts
`);

/** A refused check: one more failure on KEYS[1] (ARGV[1] the window). Returns {failures, ms until the window ends}. */
export const SPEND = script(`
local count, ttl = add(KEYS[1], 1, tonumber(ARGV[1]))
return {count, ttl}
`);
