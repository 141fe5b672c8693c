-- lay.lua v1: set one bucket's stock before the sale starts, and record the
-- replication id of the server that holds it (see claim.lua's fence).
-- KEYS[1] the bucket's stock, KEYS[2] the bucket's stats (hash).
-- ARGV[1] units.
-- The fence against a Redis failover (replid(), see the prelude and the
-- package doc): a bucket whose recorded id is not this server's refuses.
local stock, stats = KEYS[1], KEYS[2]
redis.call('SET', stock, ARGV[1])
redis.call('HSET', stats, 'epoch', replid())
return 1
