/**
 * The Lua scripts behind RedisStore. Every operation that touches more than one key, or reads and then
 * writes, runs as one script, so Redis executes it atomically: no reader ever sees a half-written record,
 * and of any number of concurrent `consume` calls exactly one finds `c == '0'`.
 *
 * Layout (see docs/redis-store.md): a record is a HASH `<prefix>rec:<kind>:<id>` with fields
 *   v  the value as JSON, c  '0' | '1' (consumed), g  the record's grant ids as a JSON array;
 * a grant index is a ZSET `<prefix>grant:<grantId>` of record keys scored by their expiry time (ms,
 * Redis clock). Scores let `put` drop members whose records have expired, and the index's own expiry is
 * set to its latest member's, so it never outlives what it indexes nor grows without bound.
 *
 * Grant index keys are derived inside the scripts from the prefix (ARGV), because the grants a record
 * used to belong to are only known after reading it. That is fine on a single Redis or Sentinel set-up;
 * on Redis Cluster every key must hash to one slot (use a prefix with a hash tag, e.g. `{netauth}:`).
 */
import { createHash } from 'node:crypto';

export interface Script {
  source: string;
  sha: string;
}

function script(body: string): Script {
  const source = COMMON + body;
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

// Helpers shared by the scripts. `fit` sets an index's expiry to that of its latest member; an index
// with no member left is removed by Redis itself (an empty ZSET does not exist).
const COMMON = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fit(idx)
  local last = redis.call('ZRANGE', idx, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIREAT', idx, last[2]) end
end
local function leave(gprefix, key, grants_json, except)
  for _, grant in ipairs(cjson.decode(grants_json)) do
    if not except[grant] then
      local idx = gprefix .. grant
      redis.call('ZREM', idx, key)
      fit(idx)
    end
  end
end
`;

// The whole of `put`, shared by PUT and ADD.
const WRITE = `
local key, gprefix, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local expires = string.format('%.0f', now + ttl)
local keep = {}
for i = 5, #ARGV do keep[ARGV[i]] = true end
local old = redis.call('HGET', key, 'g')
if old then leave(gprefix, key, old, keep) end
redis.call('DEL', key)
redis.call('HSET', key, 'v', ARGV[3], 'c', '0', 'g', ARGV[4])
redis.call('PEXPIRE', key, ttl)
for i = 5, #ARGV do
  local idx = gprefix .. ARGV[i]
  -- Members whose records have expired go now, so a long-lived grant's index stays as small as its live set.
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
  redis.call('ZADD', idx, expires, key)
  fit(idx)
end
return 1
`;

/**
 * KEYS[1] record key. ARGV: [1] grant index prefix, [2] ttl ms, [3] value JSON, [4] grants JSON,
 * [5..] grant ids. Overwrites the whole record (so `c` goes back to '0') and moves it between indexes.
 */
export const PUT = script(WRITE);

/** As PUT, but only when no record lives under KEYS[1] (Redis expires keys itself). Returns 1 when written. */
export const ADD = script(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
` + WRITE);

/** KEYS[1] record key. Returns 1 only for the call that flipped `c` from '0' to '1'. */
export const CONSUME = script(`
if redis.call('HGET', KEYS[1], 'c') == '0' then
  redis.call('HSET', KEYS[1], 'c', '1')
  return 1
end
return 0
`);

/** KEYS[1] record key. ARGV[1] grant index prefix. */
export const DELETE = script(`
local g = redis.call('HGET', KEYS[1], 'g')
if g then leave(ARGV[1], KEYS[1], g, {}) end
redis.call('DEL', KEYS[1])
return 1
`);

/**
 * KEYS[1] grant index key. ARGV: [1] grant index prefix, [2] grant id. A member is deleted only if its
 * record still lists the grant: a record that expired and was written again under other grants (same
 * id, e.g. a consent record) must survive the revocation of a grant it no longer belongs to.
 */
export const REVOKE = script(`
local gprefix, grant = ARGV[1], ARGV[2]
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local g = redis.call('HGET', key, 'g')
  if g then
    local mine = false
    for _, id in ipairs(cjson.decode(g)) do
      if id == grant then mine = true end
    end
    if mine then
      leave(gprefix, key, g, { [grant] = true })
      redis.call('DEL', key)
    end
  end
end
redis.call('DEL', KEYS[1])
return 1
`);
