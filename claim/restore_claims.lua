-- restore_claims.lua v1: step two of rebuilding a frozen bucket: write back a
-- chunk of its claims as the order stream tells them, with each user's held
-- claims, claim history and idempotency key, so per-user limits and replays
-- hold after a failover.
-- KEYS[1] claim records, KEYS[2] expiry index, KEYS[3] frozen marker; then
-- for claim i: KEYS[3i+1] the user's held claims, KEYS[3i+2] the user's
-- claim history, KEYS[3i+3] the idempotency key (not written when its TTL
-- is 0). All share the bucket's hash tag.
-- ARGV[1] the rebuild's token; then for claim i, 4 each from ARGV[4i-2]:
-- claim id, record JSON (with status pending, confirmed or released),
-- expiry deadline (ms, pending only), idempotency TTL (s, 0 when no key).
-- Reply: 1, or 0 when the bucket is not frozen by this rebuild (nothing is
-- changed).
local records, expiry, frozen = KEYS[1], KEYS[2], KEYS[3]
if redis.call('GET', frozen) ~= ARGV[1] then
  return 0
end
for i = 1, (#ARGV - 1) / 4 do
  local a, k = 1 + 4 * (i - 1), 3 * i
  local id, raw = ARGV[a + 1], ARGV[a + 2]
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
end
return 1
