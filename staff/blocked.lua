-- blocked.lua v1: read an address's failed admin authentications.
-- KEYS[1] the address's failure counter
-- Reply {failures, ttl_ms}; {0, 0} when there is none.
local failures = KEYS[1]
local n = tonumber(redis.call('GET', failures) or '0')
if n == 0 then
  return {0, 0}
end
return {n, redis.call('PTTL', failures)}
