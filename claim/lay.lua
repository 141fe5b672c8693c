-- lay.lua: set one bucket's stock before the sale starts, and record the
-- replication id of the server that holds it (see claim.lua's fence).
-- KEYS[1] the bucket's stock, KEYS[2] the bucket's stats (hash).
-- ARGV[1] units.
-- The fence against a Redis failover: the bucket remembers the replication
-- id (master_replid) of the server its stock was laid or rebuilt on. A
-- promoted replica gets a new one, so a stale copy of the stock refuses
-- until a rebuild has recomputed it from the order stream. A bucket with no
-- recorded id (never laid, or its server came back without its data)
-- refuses too: starting afresh would forget its claims. An embedded server
-- without INFO has no replicas, and no id: '' == ''.
local function replid()
  local ok, info = pcall(redis.call, 'INFO', 'replication')
  if not ok or type(info) ~= 'string' then return '' end
  return string.match(info, 'master_replid:(%w+)') or ''
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'epoch', replid())
return 1
