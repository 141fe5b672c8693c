-- restore.lua v2: step one of rebuilding a frozen bucket from the order
-- stream: reset its stock, stats and transfer state, start a new generation,
-- and drop its claim records, outbox and expiry index (restore_claims.lua
-- fills them again).
-- KEYS[1] stock, KEYS[2] claim records, KEYS[3] outbox, KEYS[4] stats,
-- KEYS[5] expiry index, KEYS[6] frozen marker (the bucket's keys in the
-- order claim.lua takes them), KEYS[7] pending transfers out, KEYS[8]
-- applied transfer ids, KEYS[9] parked units, KEYS[10] generation. All
-- share the bucket's hash tag.
-- ARGV[1] stock, ARGV[2] granted, ARGV[3] released, ARGV[4] new generation,
-- ARGV[5] the rebuild's token, ARGV[6] the stream sequence of the rebuild's
-- epoch marker (the bucket's new epoch, carried by its granted events),
-- ARGV[7] cancelled, ARGV[8] restocked (cancelled claims whose unit went
-- back to the stock).
-- Reply: 1, or 0 when the bucket is not frozen by this rebuild (nothing is
-- changed). The rebuilt stock belongs to this server: its replication id
-- (replid(), see the prelude) becomes the bucket's epoch, and the fence of
-- claim.lua lets it through again.
local stock, records, outbox, stats, expiry, frozen = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local transfers, applied, parked, generation = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
if redis.call('GET', frozen) ~= ARGV[5] then
  return 0
end
redis.call('DEL', records, outbox, expiry, transfers, applied, parked)
redis.call('SET', stock, ARGV[1])
redis.call('DEL', stats)
redis.call('HSET', stats, 'granted', ARGV[2], 'released', ARGV[3], 'epoch', replid(), 'mark', ARGV[6],
  'cancelled', ARGV[7], 'restocked', ARGV[8])
redis.call('SET', generation, ARGV[4])
return 1
