-- passmint.lua v1: record a newly minted bypass pass.
-- KEYS[1] the pass hash, KEYS[2] the event's set of pass ids, KEYS[3] the
-- event's pass counters (minted, redeemed, revoked, refused). All keys share
-- the event's hash tag.
-- ARGV[1] id, ARGV[2] expiry (unix s), ARGV[3] uses (0: unlimited),
-- ARGV[4] minted by, ARGV[5] minted at (unix s), ARGV[6] note.
-- Reply 1 when recorded, 0 when the id exists (nothing is changed).
local pass, ids, counts = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', pass) == 1 then return 0 end
redis.call('HSET', pass, 'id', ARGV[1], 'exp', ARGV[2], 'uses', ARGV[3], 'used', 0,
  'by', ARGV[4], 'at', ARGV[5], 'note', ARGV[6])
redis.call('SADD', ids, ARGV[1])
redis.call('HINCRBY', counts, 'minted', 1)
return 1
