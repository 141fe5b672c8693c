-- passredeem.lua v2: spend one use of a bypass pass, or count a refusal.
-- KEYS[1] the pass hash, KEYS[2] the event's pass counters, KEYS[3] the set
-- of users who redeemed the pass. All share the event's hash tag.
-- ARGV[1] 1 to count a refusal decided before Redis (a genuine pass that
-- expired) and change nothing else; ARGV[2] the user redeeming.
-- A use is one person: a user who redeemed the pass before (a retry whose
-- answer was lost, or a later visit) is answered as redeemed again and
-- spends no use, unless the pass was revoked since.
-- Reply {code, used}: 0 redeemed, 1 unknown pass, 2 revoked, 3 used up,
-- 4 refusal counted, 5 redeemed before by this user (no use spent).
local pass, counts, users = KEYS[1], KEYS[2], KEYS[3]
local st = redis.call('HMGET', pass, 'uses', 'used', 'revoked')
if ARGV[1] == '1' then
  redis.call('HINCRBY', counts, 'refused', 1)
  return {4, tonumber(st[2] or '0')}
end
if not st[1] then return {1, 0} end
local uses, used = tonumber(st[1]), tonumber(st[2])
local code = 0
if st[3] then
  code = 2
elseif redis.call('SISMEMBER', users, ARGV[2]) == 1 then
  return {5, used}
elseif uses > 0 and used >= uses then
  code = 3
end
if code ~= 0 then
  redis.call('HINCRBY', counts, 'refused', 1)
  return {code, used}
end
redis.call('SADD', users, ARGV[2])
used = redis.call('HINCRBY', pass, 'used', 1)
redis.call('HINCRBY', counts, 'redeemed', 1)
return {0, used}
