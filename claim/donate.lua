-- donate.lua: step 1 of a stock transfer, on the donor bucket d: move up to
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
-- The fence against a Redis failover: the bucket remembers the replication
-- id (master_replid) of the server its stock was laid or rebuilt on. A
-- promoted replica gets a new one, so a stale copy of the stock refuses
-- until a rebuild has recomputed it from the order stream. A bucket with no
-- recorded id (never laid, or its server came back without its data)
-- refuses too: starting afresh would forget its claims. An embedded server
-- without INFO has no replicas, and no id: '' == ''.
local function replid()
  local ok, info = pcall(redis.call, 'INFO', 'replication')
  if not ok or type(info) ~= 'string' then return '' end
  return string.match(info, 'master_replid:(%w+)') or ''
end
if redis.call('EXISTS', KEYS[5]) == 1 then
  return {4, 0, ''}
end
if redis.call('HGET', KEYS[6], 'epoch') ~= replid() then
  return {5, 0, ''}
end
local left = tonumber(redis.call('GET', KEYS[1]) or '0')
if left <= 0 then
  return {3, 0, ''}
end
local n = math.min(tonumber(ARGV[3]), math.ceil(left / 2))
redis.call('DECRBY', KEYS[1], n)
local gen = redis.call('GET', KEYS[4]) or '0'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode({to = tonumber(ARGV[2]), n = n, gen = gen, at = now}))
redis.call('INCRBY', KEYS[3], n)
return {0, n, gen}
