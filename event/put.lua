-- put.lua: compare-and-set of one event's configuration.
-- KEYS[1] config key (JSON string)
-- ARGV[1] expected version (0: must not exist), ARGV[2] new JSON
-- Reply 1 when stored, 0 when the stored version differs.
local cur = redis.call('GET', KEYS[1])
local version = 0
if cur then
  version = tonumber(cjson.decode(cur)['version']) or 0
end
if version ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
