-- unfreeze.lua: end a rebuild's freeze of one bucket, if it is still that
-- rebuild's.
-- KEYS[1] the bucket's frozen marker.
-- ARGV[1] the rebuild's token.
-- Reply: 1 unfrozen, 0 not frozen by this token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
