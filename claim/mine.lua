-- mine.lua: the records of every claim a user ever held in one bucket.
-- KEYS[1] the user's claim history (set), KEYS[2] claim records.
-- Reply: claim id, record JSON, claim id, record JSON, ...
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local rec = redis.call('HGET', KEYS[2], id)
  if rec then
    table.insert(out, id)
    table.insert(out, rec)
  end
end
return out
