-- bucket.lua v1: one token-bucket decision, atomic, on Redis time.
-- KEYS[1] the bucket: a hash {t = tokens (float), ms = last update, unix ms}.
-- ARGV[1] refill rate (tokens per second, > 0), ARGV[2] burst (capacity,
-- >= 1), ARGV[3] cost of this request (tokens, >= 1).
-- Reply {allowed (1|0), tokens_left (floor), retry_after_ms}: retry_after_ms
-- is 0 when allowed, else when the bucket will hold cost tokens again.
-- One key per call, hash-tagged on its own, so buckets spread over a Redis
-- Cluster. A refused request writes nothing: the bucket's state is a pure
-- function of (t, ms) and the clock. A key idle long enough to refill is
-- worth nothing, so it expires (PEXPIRE) and a missing key reads as full.
local bucket = KEYS[1]
local now = now_ms()
local rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

local s = redis.call('HMGET', bucket, 't', 'ms')
local tokens, last = tonumber(s[1]), tonumber(s[2])
if tokens == nil or last == nil then
  tokens, last = burst, now
end
-- A clock that went back (failover to a replica) refills nothing.
if now > last then
  tokens = math.min(burst, tokens + (now - last) * rate / 1000)
end
tokens = math.min(tokens, burst) -- the burst may have been lowered

if tokens < cost then
  return {0, math.floor(tokens), math.ceil((cost - tokens) * 1000 / rate)}
end
tokens = tokens - cost
redis.call('HSET', bucket, 't', tostring(tokens), 'ms', now)
redis.call('PEXPIRE', bucket, math.ceil(burst * 1000 / rate) + 1000)
return {1, math.floor(tokens), 0}
