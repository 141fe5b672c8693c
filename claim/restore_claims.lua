-- restore_claims.lua v2: step two of rebuilding a frozen bucket: write back a
-- chunk of its claims as the order stream tells them, with each user's held
-- claims, claim history and idempotency key, and each held claim's signal
-- sets, so per-user and per-signal limits and replays hold after a failover.
-- KEYS[1] claim records, KEYS[2] expiry index, KEYS[3] frozen marker; then
-- for each claim in turn: the user's held claims, the user's claim history,
-- the idempotency key (not written when its TTL is 0), then the m signal
-- sets it counts in (none for a released claim). All share the bucket's
-- hash tag.
-- ARGV[1] the rebuild's token; then for each claim, 6 each: claim id,
-- record JSON (with status pending, confirmed or released, and "sig" the
-- signal sets' keys), expiry deadline (ms, pending only), idempotency TTL
-- (s, 0 when no key), m, the signal sets' expiry (unix ms, 0: none set).
-- Reply: 1, or 0 when the bucket is not frozen by this rebuild (nothing is
-- changed).
local records, expiry, frozen = KEYS[1], KEYS[2], KEYS[3]
if redis.call('GET', frozen) ~= ARGV[1] then
  return 0
end
local a, k = 1, 3
while a < #ARGV do
  local id, raw = ARGV[a + 1], ARGV[a + 2]
  local m, expires = tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
  local status = cjson.decode(raw)['status']
  redis.call('HSET', records, id, raw)
  redis.call('SADD', KEYS[k + 2], id)
  if status == 'released' then
    redis.call('SREM', KEYS[k + 1], id)
  else
    redis.call('SADD', KEYS[k + 1], id)
  end
  if status == 'pending' then
    redis.call('ZADD', expiry, tonumber(ARGV[a + 3]), id)
  end
  if tonumber(ARGV[a + 4]) > 0 then
    redis.call('SET', KEYS[k + 3], id, 'EX', ARGV[a + 4])
  end
  for j = 1, m do
    redis.call('SADD', KEYS[k + 3 + j], id)
    if expires > 0 then
      redis.call('PEXPIREAT', KEYS[k + 3 + j], expires)
    end
  end
  a, k = a + 6, k + 3 + m
end
return 1
