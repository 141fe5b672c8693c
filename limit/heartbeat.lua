-- heartbeat.lua v1: record one node as alive and count the live ones.
-- KEYS[1] the node set: a sorted set, member node id, score last beat (unix
-- ms, Redis TIME).
-- ARGV[1] node id, ARGV[2] ttl (ms): a node not seen for ttl is gone.
-- Reply: the number of live nodes, this one included.
local nodes = KEYS[1]
local now = now_ms()
local ttl = tonumber(ARGV[2])
redis.call('ZADD', nodes, now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', nodes, '-inf', now - ttl)
redis.call('PEXPIRE', nodes, ttl * 2)
return redis.call('ZCARD', nodes)
