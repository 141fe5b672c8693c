-- passredeem.lua v1: spend one use of a bypass pass, or count a refusal.
-- KEYS[1] the pass hash, KEYS[2] the event's pass counters. Both share the
-- event's hash tag.
-- ARGV[1] 1 to count a refusal decided before Redis (a genuine pass that
-- expired) and change nothing else.
-- Reply {code, used}: 0 redeemed, 1 unknown pass, 2 revoked, 3 used up,
-- 4 refusal counted.
local pass, counts = KEYS[1], KEYS[2]
local st = redis.call('HMGET', pass, 'uses', 'used', 'revoked')
if ARGV[1] == '1' then
  redis.call('HINCRBY', counts, 'refused', 1)
  return {4, tonumber(st[2] or '0')}
end
if not st[1] then return {1, 0} end
local uses, used = tonumber(st[1]), tonumber(st[2])
local code = 0
if st[3] then code = 2 elseif uses > 0 and used >= uses then code = 3 end
if code ~= 0 then
  redis.call('HINCRBY', counts, 'refused', 1)
  return {code, used}
end
used = redis.call('HINCRBY', pass, 'used', 1)
redis.call('HINCRBY', counts, 'redeemed', 1)
return {0, used}
