-- settle.lua v1: step 3 of a stock transfer, on the donor bucket d: forget the
-- pending record of transfer ARGV[1] once the recipient has accepted it (or
-- refused it as stale).
-- KEYS[1] d's pending transfers out, KEYS[2] d's parked units.
-- ARGV[1] transfer id.
-- Reply: the units the record held, 0 when it was already gone.
local transfers, parked = KEYS[1], KEYS[2]
local rec = redis.call('HGET', transfers, ARGV[1])
if not rec then
  return 0
end
local n = cjson.decode(rec)['n']
redis.call('HDEL', transfers, ARGV[1])
redis.call('DECRBY', parked, n)
return n
