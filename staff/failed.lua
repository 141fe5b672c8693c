-- failed.lua v1: count one failed admin authentication of an address.
-- KEYS[1] the address's failure counter
-- ARGV[1] window in ms (set when the first failure opens the window)
-- Reply {failures, ttl_ms}.
local failures = KEYS[1]
local n = redis.call('INCR', failures)
if n == 1 then
  redis.call('PEXPIRE', failures, ARGV[1])
end
local ttl = redis.call('PTTL', failures)
if ttl < 0 then
  -- a counter without expiry (left by a crash between INCR and PEXPIRE
  -- in an older build): give it one
  redis.call('PEXPIRE', failures, ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
