-- activate.lua v1: count an admission under max_active before its token is
-- handed out. The node minting an admission token (a status poll, a room's
-- join, gate or renewal) runs it once per token, so that the person counts
-- as active until the token expires even if the node dies before its next
-- tick writes the presence mark: a mark lost with the node would otherwise
-- leave the position a no-show after the grace, its place given to someone
-- else while the token stays valid.
-- KEYS[1] active set (zset position -> admission deadline, unix ms),
-- KEYS[2] finished bitmap (bit = position). Both share the event's hash tag.
-- ARGV[1] position, ARGV[2] the token's expiry (unix ms).
-- A finished position is never made active again (as in advance.lua); a
-- later deadline is never shortened (GT). The presence mark itself (the
-- bitmap, the no-show count, the report's tally) stays the tick's.
-- Reply 1 when counted, 0 for a finished position.
local activeset, finished = KEYS[1], KEYS[2]
if redis.call('GETBIT', finished, ARGV[1]) == 1 then return 0 end
redis.call('ZADD', activeset, 'GT', ARGV[2], ARGV[1])
return 1
