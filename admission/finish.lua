-- finish.lua v1: the shop reports a checkout session finished. The session is
-- named by its admission token's jti, which the node that issued the token
-- mapped to the position on its next tick (Frontier.recordSessions).
-- KEYS[1] jti -> position, KEYS[2] finished bitmap (bit = position),
-- KEYS[3] active set (zset position -> admission deadline).
-- All keys share the event's hash tag.
-- The position is marked finished and leaves the active set: the next
-- advance may admit in its place, at the rate. Idempotent: a repeat finds
-- the bit already set and changes nothing.
-- Reply {found (0/1), position, already finished (0/1)}.
local session, finished, activeset = KEYS[1], KEYS[2], KEYS[3]
local pos = redis.call('GET', session)
if not pos then return {0, 0, 0} end
local was = redis.call('SETBIT', finished, tonumber(pos), 1)
redis.call('ZREM', activeset, pos)
return {1, tonumber(pos), was}
