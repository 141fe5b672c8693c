-- claim.lua: the one atomic claim step of a user in their home bucket.
-- KEYS[1] bucket stock (units left), KEYS[2] the user's claim ids (set),
-- KEYS[3] idempotency key -> claim id, KEYS[4] claim records (hash claim id
-- -> JSON {user, pos, at, status}), KEYS[5] outbox (hash claim id -> order
-- event JSON), KEYS[6] bucket stats (hash: granted, released).
-- All keys share the bucket's hash tag: safe on Redis Cluster.
-- ARGV[1] user, ARGV[2] per-user limit, ARGV[3] new claim id,
-- ARGV[4] order event JSON, ARGV[5] idempotency TTL (s), ARGV[6] position,
-- ARGV[7] now (unix ms).
-- Reply {code, claim id, units left, status, payload}
-- code 0 granted, 1 replay of an earlier request (payload is set while the
-- order event is still in the outbox, '' once published), 2 per-user limit
-- reached (claim id field holds the user's ids joined by ','), 3 sold out.
local prior = redis.call('GET', KEYS[3])
if prior then
  local rec = redis.call('HGET', KEYS[4], prior)
  local st = 'pending'
  if rec then st = cjson.decode(rec)['status'] end
  local payload = redis.call('HGET', KEYS[5], prior) or ''
  return {1, prior, 0, st, payload}
end
local held = redis.call('SMEMBERS', KEYS[2])
if #held >= tonumber(ARGV[2]) then
  return {2, table.concat(held, ','), 0, '', ''}
end
local left = tonumber(redis.call('GET', KEYS[1]) or '0')
if left <= 0 then
  return {3, '', 0, '', ''}
end
left = redis.call('DECR', KEYS[1])
redis.call('SADD', KEYS[2], ARGV[3])
redis.call('SET', KEYS[3], ARGV[3], 'EX', ARGV[5])
redis.call('HSET', KEYS[4], ARGV[3], cjson.encode({user = ARGV[1], pos = tonumber(ARGV[6]), at = tonumber(ARGV[7]), status = 'pending'}))
redis.call('HSET', KEYS[5], ARGV[3], ARGV[4])
redis.call('HINCRBY', KEYS[6], 'granted', 1)
return {0, ARGV[3], left, 'pending', ARGV[4]}
