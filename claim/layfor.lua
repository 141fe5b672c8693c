-- layfor.lua v1: set one bucket's stock for one saved configuration version,
-- and record the replication id of the server that holds it (see
-- claim.lua's fence).
-- KEYS[1] the bucket's stock, KEYS[2] the bucket's stats (hash: cv = the
-- configuration version the stock was laid for).
-- ARGV[1] units, ARGV[2] configuration version, ARGV[3] starts_at (unix ms).
-- Reply 1 laid, 0 skipped (a newer version's stock is already laid), -1
-- refused: the sale has started by Redis TIME (or units were granted) and
-- live stock is never overwritten.
local stock, stats = KEYS[1], KEYS[2]
local cv = tonumber(redis.call('HGET', stats, 'cv') or '-1')
if cv > tonumber(ARGV[2]) then
  return 0
end
local now = now_ms()
local granted = tonumber(redis.call('HGET', stats, 'granted') or '0')
if granted > 0 or (cv >= 0 and now >= tonumber(ARGV[3])) then
  return -1
end
redis.call('SET', stock, ARGV[1])
redis.call('HSET', stats, 'epoch', replid(), 'cv', ARGV[2])
return 1
