-- failed.lua: count one failed admin authentication of an address.
-- KEYS[1] the address's failure counter
-- ARGV[1] window in ms (set when the first failure opens the window)
-- Reply {failures, ttl_ms}.
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  -- a counter without expiry (left by a crash between INCR and PEXPIRE
  -- in an older build): give it one
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
