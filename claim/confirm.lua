-- confirm.lua v2: mark a pending claim confirmed (the order worker recorded its
-- order); a confirmed claim never expires.
-- KEYS[1] claim records, KEYS[2] expiry index, KEYS[3] frozen marker,
-- KEYS[4] bucket stats (field epoch). All share the bucket's hash tag.
-- ARGV[1] claim id.
-- Reply {code, status}: 0 with the status now (confirmed, or released when
-- the release came first), 1 no such claim, 5 frozen, 6 stale (the Redis
-- server changed since the stock was laid, or lost it: rebuild first).
-- The fence against a Redis failover, as in claim.lua: a confirmation
-- decided on a promoted replica's stale copy could contradict one the old
-- primary made, so it waits for the rebuild.
-- The record changes by its status member only, never through cjson.encode
-- (which keeps 14 significant digits of its numbers).
local records, expiry, frozen, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', frozen) == 1 then
  return {5, ''}
end
if redis.call('HGET', stats, 'epoch') ~= replid() then
  return {6, ''}
end
local raw = redis.call('HGET', records, ARGV[1])
if not raw then
  return {1, ''}
end
local rec = cjson.decode(raw)
if rec['status'] == 'pending' then
  local confirmed, k = string.gsub(raw, '"status":"pending"', '"status":"confirmed"', 1)
  if k ~= 1 then
    return redis.error_reply('confirm.lua: record ' .. ARGV[1] .. ' does not read "status":"pending"')
  end
  rec['status'] = 'confirmed'
  redis.call('HSET', records, ARGV[1], confirmed)
  redis.call('ZREM', expiry, ARGV[1])
end
return {0, rec['status']}
