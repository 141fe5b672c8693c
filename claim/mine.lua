-- mine.lua v1: the records of every claim a user ever held in one bucket.
-- KEYS[1] the user's claim history (set), KEYS[2] claim records.
-- Reply: claim id, record JSON, claim id, record JSON, ...
local history, records = KEYS[1], KEYS[2]
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', history)) do
  local rec = redis.call('HGET', records, id)
  if rec then
    table.insert(out, id)
    table.insert(out, rec)
  end
end
return out
