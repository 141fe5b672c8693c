-- assert.lua v1: accept an App Attest assertion whose signature verified:
-- spend its challenge and store its counter, both or neither.
-- KEYS[1] the challenge's spent marker, KEYS[2] the key (a hash: pub, n).
-- ARGV[1] the assertion's counter, ARGV[2] how long the marker outlives
-- the challenge's validity (ms).
-- Reply: 1 accepted, 0 the challenge was spent before, -1 the key is not
-- stored, -2 the counter is not greater than the stored one (a replayed or
-- reordered assertion). Only 1 writes anything. Both KEYS share the
-- sale's {ev#att} tag.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local n = redis.call('HGET', KEYS[2], 'n')
if not n then
  return -1
end
local counter = tonumber(ARGV[1])
if tonumber(n) >= counter then
  return -2
end
redis.call('SET', KEYS[1], 1, 'PX', ARGV[2])
redis.call('HSET', KEYS[2], 'n', counter)
return 1
