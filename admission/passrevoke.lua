-- passrevoke.lua v1: revoke a bypass pass.
-- KEYS[1] the pass hash, KEYS[2] the event's pass counters. Both share the
-- event's hash tag.
-- ARGV[1] revoked by, ARGV[2] revoked at (unix s).
-- Reply 0 revoked now, 1 unknown pass, 2 already revoked (nothing changed).
local pass, counts = KEYS[1], KEYS[2]
if redis.call('EXISTS', pass) == 0 then return 1 end
if redis.call('HEXISTS', pass, 'revoked') == 1 then return 2 end
redis.call('HSET', pass, 'revoked', ARGV[2], 'revoked_by', ARGV[1])
redis.call('HINCRBY', counts, 'revoked', 1)
return 0
