-- get.lua v1: one event's configuration and the Redis TIME of the read, in
-- one step: the instant a node's view of it was taken (see MaxViewAge).
-- KEYS[1] config key (JSON string).
-- Reply {now (unix ms), JSON}, or {now} when there is none.
local now = now_ms()
return {now, redis.call('GET', KEYS[1])}
