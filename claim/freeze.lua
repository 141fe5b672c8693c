-- freeze.lua v1: freeze one bucket for a rebuild: claims, transfers, releases
-- and confirmations on it answer "frozen" until unfreeze.lua runs.
-- KEYS[1] the bucket's frozen marker.
-- ARGV[1] the rebuild's token, ARGV[2] now (unix ms), ARGV[3] age (ms)
-- after which another rebuild's freeze counts as abandoned.
-- Reply: 1 frozen for this token, 0 frozen by another rebuild still young.
local frozen = KEYS[1]
local cur = redis.call('GET', frozen)
if cur and cur ~= ARGV[1] then
  local at = tonumber(string.match(cur, '@(%d+)$') or '0')
  if tonumber(ARGV[2]) - at < tonumber(ARGV[3]) then
    return 0
  end
end
redis.call('SET', frozen, ARGV[1])
return 1
