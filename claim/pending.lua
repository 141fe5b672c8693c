-- pending.lua v2: who holds a pending claim in one bucket (read only). A
-- claim is pending from its grant until it is confirmed or released;
-- exactly those claims are in the expiry index.
-- KEYS[1] expiry index (zset claim id -> deadline), KEYS[2] claim records.
-- Both share the bucket's hash tag.
-- ARGV[1] most claims read.
-- Reply: position, user, position, user, … one pair per pending claim (a
-- person with several pending claims appears several times: the caller
-- counts people by user).
local expiry, records = KEYS[1], KEYS[2]
local ids = redis.call('ZRANGE', expiry, 0, tonumber(ARGV[1]) - 1)
local out = {}
if #ids == 0 then return out end
local recs = redis.call('HMGET', records, unpack(ids))
for i = 1, #recs do
  if recs[i] then
    local rec = cjson.decode(recs[i])
    local pos = tonumber(rec['pos'])
    if pos and type(rec['user']) == 'string' then
      table.insert(out, pos)
      table.insert(out, rec['user'])
    end
  end
end
return out
