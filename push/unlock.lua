-- unlock.lua v1: release a place's send lock only if it is still the caller's.
-- KEYS[1] the lock (ar:{event}:push:place:sending). ARGV[1] the caller's
-- token, the value it set the lock to with SET NX PX.
-- A lock that expired while its holder sent may have been taken by another
-- copy of the notice: deleting it then would let a third copy send beside
-- the second. Reply: 1 released, 0 not the caller's (expired, or another's).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
