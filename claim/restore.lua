-- restore.lua: step one of rebuilding a frozen bucket from the order stream:
-- reset its stock, stats and transfer state, start a new generation, and
-- drop its claim records, outbox and expiry index (restore_claims.lua fills
-- them again).
-- KEYS[1] stock, KEYS[2] claim records, KEYS[3] outbox, KEYS[4] stats,
-- KEYS[5] expiry index, KEYS[6] pending transfers out, KEYS[7] applied
-- transfer ids, KEYS[8] parked units, KEYS[9] generation, KEYS[10] frozen
-- marker. All share the bucket's hash tag.
-- ARGV[1] stock, ARGV[2] granted, ARGV[3] released, ARGV[4] new generation,
-- ARGV[5] the rebuild's token, ARGV[6] the stream sequence of the rebuild's
-- epoch marker (the bucket's new epoch, carried by its granted events).
-- Reply: 1, or 0 when the bucket is not frozen by this rebuild (nothing is
-- changed). The rebuilt stock belongs to this server: its replication id
-- becomes the bucket's epoch (see claim.lua's fence).
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
if redis.call('GET', KEYS[10]) ~= ARGV[5] then
  return 0
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[7], KEYS[8])
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[4])
redis.call('HSET', KEYS[4], 'granted', ARGV[2], 'released', ARGV[3], 'epoch', replid(), 'mark', ARGV[6])
redis.call('SET', KEYS[9], ARGV[4])
return 1
