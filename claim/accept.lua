-- accept.lua v1: step 2 of a stock transfer, on the recipient bucket h: credit
-- the units of transfer ARGV[1] to h's stock, at most once per transfer id.
-- KEYS[1] h's stock, KEYS[2] h's applied transfer ids (set), KEYS[3] h's
-- generation, KEYS[4] h's frozen marker. All share h's hash tag.
-- ARGV[1] transfer id, ARGV[2] units, ARGV[3] generation of the donor record.
-- Reply: 0 credited now, 1 credited before (a repeat), 2 stale generation (a
-- rebuild re-laid all stock since the donor record was written: the units
-- are already counted, never credit them), 4 frozen.
local stock, applied, gen, frozen = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', frozen) == 1 then
  return 4
end
if (redis.call('GET', gen) or '0') ~= ARGV[3] then
  return 2
end
if redis.call('SADD', applied, ARGV[1]) == 0 then
  return 1
end
redis.call('INCRBY', stock, tonumber(ARGV[2]))
return 0
