-- passrevoke.lua: revoke a bypass pass.
-- KEYS[1] the pass hash, KEYS[2] the event's pass counters. Both share the
-- event's hash tag.
-- ARGV[1] revoked by, ARGV[2] revoked at (unix s).
-- Reply 0 revoked now, 1 unknown pass, 2 already revoked (nothing changed).
if redis.call('EXISTS', KEYS[1]) == 0 then return 1 end
if redis.call('HEXISTS', KEYS[1], 'revoked') == 1 then return 2 end
redis.call('HSET', KEYS[1], 'revoked', ARGV[2], 'revoked_by', ARGV[1])
redis.call('HINCRBY', KEYS[2], 'revoked', 1)
return 0
