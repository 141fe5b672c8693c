-- finish.lua: the shop reports a checkout session finished. The session is
-- named by its admission token's jti, which the node that issued the token
-- mapped to the position on its next tick (Frontier.recordSessions).
-- KEYS[1] jti -> position, KEYS[2] finished bitmap (bit = position),
-- KEYS[3] active set (zset position -> admission deadline).
-- All keys share the event's hash tag.
-- The position is marked finished and leaves the active set: the next
-- advance may admit in its place, at the rate. Idempotent: a repeat finds
-- the bit already set and changes nothing.
-- Reply {found (0/1), position, already finished (0/1)}.
local pos = redis.call('GET', KEYS[1])
if not pos then return {0, 0, 0} end
local was = redis.call('SETBIT', KEYS[2], tonumber(pos), 1)
redis.call('ZREM', KEYS[3], pos)
return {1, tonumber(pos), was}
