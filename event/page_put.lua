-- page_put.lua v1: compare-and-set of one event's pages (draft and published).
-- KEYS[1] page key (hash: v version, json the event.Pages JSON)
-- ARGV[1] expected version (0: none stored yet), ARGV[2] new JSON.
-- Reply 1 stored (version now ARGV[1] + 1), 0 the stored version differs.
local pages = KEYS[1]
local v = tonumber(redis.call('HGET', pages, 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', pages, 'v', v + 1, 'json', ARGV[2])
return 1
