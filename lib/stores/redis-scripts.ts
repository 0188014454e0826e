/**
 * The Lua scripts behind RedisStore. Every operation that touches more than one key, or reads and then
 * writes, runs as one script, so Redis executes it atomically: no reader ever sees a half-written record,
 * and of any number of concurrent `consume` calls exactly one finds the record unconsumed.
 *
 * Every key a script touches is in KEYS (the layout is lib/stores/redis-keys.ts), and on Redis Cluster all the
 * keys of one call share one hash tag, so the call runs on one shard. A grant index is a ZSET of members
 * (record keys without the prefix) scored by their record's expiry time (ms, Redis clock): scores let a write
 * drop members whose records have expired, and the index expires with its latest member, so it never outlives
 * what it indexes nor grows without bound. A member may outlive its record (deleted, or rewritten under other
 * grants): REVOKE deletes a member's record only while the record still lists the grant.
 */
import { createHash } from 'node:crypto';

export interface Script {
  source: string;
  sha: string;
}

/** A script: the Lua helpers it shares with its peers (`prelude`), then its own body; with the SHA-1 EVALSHA names it by. */
export function defineScript(prelude: string, body: string): Script {
  const source = prelude + body;
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

function script(body: string): Script {
  return defineScript(COMMON, body);
}

// Helpers shared by the scripts. `index` adds a member, first dropping members already expired, and sets the
// index's expiry to its latest member's (an index with no member left is removed by Redis itself).
const COMMON = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function index_all(idx, adds, now)
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
  redis.call('ZADD', idx, unpack(adds))
  local last = redis.call('ZRANGE', idx, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', idx, last[2])
end
-- %.0f: a Lua number would be sent with 14 significant digits, too few for a time in ms one day.
local function index(idx, member, ttl, now)
  index_all(idx, {string.format('%.0f', now + ttl), member}, now)
end
local function fit(idx)
  local last = redis.call('ZRANGE', idx, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIREAT', idx, last[2]) end
end
`;

/**
 * KEYS[1] the record, KEYS[2..] indexes of its grants (those on this shard). ARGV: [1] ttl ms, [2] the encoded
 * record, [3] its index member, [4] '1' to write only when no record lives under KEYS[1] (`add`).
 * Returns 1 when written.
 */
export const PUT = script(`
if ARGV[4] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local ttl = tonumber(ARGV[1])
local now = now_ms()
redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
for i = 2, #KEYS do index(KEYS[i], ARGV[3], ttl, now) end
return 1
`);

/**
 * KEYS: indexes of a record's grants on another shard than the record (Redis Cluster only). ARGV: [1] ttl ms,
 * [2] the record's index member. Written before the record, so a revocation that reads the index after the
 * record exists always finds it.
 */
export const INDEX = script(`
local ttl = tonumber(ARGV[1])
local now = now_ms()
for i = 1, #KEYS do index(KEYS[i], ARGV[2], ttl, now) end
return 1
`);

/**
 * KEYS[1] the record to consume, then per attached write its record key and its grant indexes. ARGV: [1] the
 * number of writes, then per write: the number of its indexes, ttl ms, the encoded record, its index member.
 * Returns 1 only for the call that flipped the record from unconsumed to consumed; only that call writes.
 * SETRANGE keeps the record's TTL, so a replay is recognised until the record expires.
 */
export const CONSUME = script(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 1) ~= '0' then return 0 end
redis.call('SETRANGE', KEYS[1], 0, '1')
local now = now_ms()
local k, a = 2, 2
-- Writes under the same grant share its index: gathered, so each index is updated once.
local order, adds = {}, {}
for w = 1, tonumber(ARGV[1]) do
  local n, ttl, record, member = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3]
  a = a + 4
  redis.call('SET', KEYS[k], record, 'PX', ttl)
  for i = 1, n do
    local idx = KEYS[k + i]
    if not adds[idx] then
      adds[idx] = {}
      order[#order + 1] = idx
    end
    local list = adds[idx]
    list[#list + 1] = string.format('%.0f', now + ttl)
    list[#list + 1] = member
  end
  k = k + n + 1
end
for _, idx in ipairs(order) do index_all(idx, adds[idx], now) end
return 1
`);

/**
 * One shard's part of revoking a grant. KEYS: [1] the grant index when ARGV[2] is '1', then records named by
 * the index. ARGV: [1] the grant id, [2] '1' when KEYS[1] is the index, [3..] members to take out of the
 * index. A record is deleted only if it still lists the grant: one that expired and was written again under
 * other grants (same id, e.g. a consent record) survives. Returns the number of members left in the index
 * (written meanwhile: the caller goes round again), 0 without the index.
 */
export const REVOKE = script(`
local grant, first = ARGV[1], 1
if ARGV[2] == '1' then first = 2 end
for i = first, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    local newline = string.find(v, '\\n', 2, true)
    for _, id in ipairs(cjson.decode(string.sub(v, 2, newline - 1))) do
      if id == grant then
        redis.call('DEL', KEYS[i])
        break
      end
    end
  end
end
if first == 1 then return 0 end
for i = 3, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
fit(KEYS[1])
return redis.call('ZCARD', KEYS[1])
`);

/**
 * KEYS[1] a data-loss marker (lib/stores/redis-markers.ts). ARGV[1] a fresh random value. Returns the marker's
 * value, first writing ARGV[1] (no expiry) when there is none.
 */
export const MARK = script(`
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`);
