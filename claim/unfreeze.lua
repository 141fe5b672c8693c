-- unfreeze.lua v1: end a rebuild's freeze of one bucket, if it is still that
-- rebuild's.
-- KEYS[1] the bucket's frozen marker.
-- ARGV[1] the rebuild's token.
-- Reply: 1 unfrozen, 0 not frozen by this token.
local frozen = KEYS[1]
if redis.call('GET', frozen) == ARGV[1] then
  redis.call('DEL', frozen)
  return 1
end
return 0
