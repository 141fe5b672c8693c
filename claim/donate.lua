-- donate.lua v1: step 1 of a stock transfer, on the donor bucket d: move up to
-- ARGV[3] units (at most half of what d holds, at least one) out of d's stock
-- into a pending-transfer record.
-- KEYS[1] d's stock, KEYS[2] d's pending transfers out (hash transfer id ->
-- JSON {to, n, gen, at}), KEYS[3] d's parked units (counter: sum of n over
-- the pending records), KEYS[4] d's generation (set by a rebuild), KEYS[5]
-- d's frozen marker, KEYS[6] d's stats (hash; field epoch). All share d's
-- hash tag.
-- ARGV[1] transfer id, ARGV[2] recipient bucket, ARGV[3] most units to move.
-- Reply {code, units, generation}: code 0 moved units > 0, 3 d is empty,
-- 4 frozen, 5 stale (a failover since the stock was laid: rebuild first).
-- The fence against a Redis failover (replid(), see the prelude and the
-- package doc): a bucket whose recorded id is not this server's refuses.
local stock, transfers, parked, generation, frozen, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
if redis.call('EXISTS', frozen) == 1 then
  return {4, 0, ''}
end
if redis.call('HGET', stats, 'epoch') ~= replid() then
  return {5, 0, ''}
end
local left = tonumber(redis.call('GET', stock) or '0')
if left <= 0 then
  return {3, 0, ''}
end
local n = math.min(tonumber(ARGV[3]), math.ceil(left / 2))
redis.call('DECRBY', stock, n)
local gen = redis.call('GET', generation) or '0'
local now = now_ms()
redis.call('HSET', transfers, ARGV[1], cjson.encode({to = tonumber(ARGV[2]), n = n, gen = gen, at = now}))
redis.call('INCRBY', parked, n)
return {0, n, gen}
