-- heartbeat.lua: record one node as alive and count the live ones.
-- KEYS[1] the node set: a sorted set, member node id, score last beat (unix
-- ms, Redis TIME).
-- ARGV[1] node id, ARGV[2] ttl (ms): a node not seen for ttl is gone.
-- Reply: the number of live nodes, this one included.
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return redis.call('ZCARD', KEYS[1])
