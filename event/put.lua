-- put.lua v1: compare-and-set of one event's configuration, refused once a
-- lock has taken hold by Redis TIME (never a node's clock).
-- KEYS[1] config key (JSON string)
-- ARGV[1] expected version (0: must not exist), ARGV[2] new JSON,
-- ARGV[3] lock instant (unix ms; 0: no lock applies).
-- Reply {code, now (unix ms)}: code 1 stored, 0 the stored version differs,
-- -1 locked (now is at or past the lock instant).
local config = KEYS[1]
local now = now_ms()
local cur = redis.call('GET', config)
local version = 0
if cur then
  version = tonumber(cjson.decode(cur)['version']) or 0
end
if version ~= tonumber(ARGV[1]) then
  return {0, now}
end
local lock = tonumber(ARGV[3])
if lock > 0 and now >= lock then
  return {-1, now}
end
redis.call('SET', config, ARGV[2])
return {1, now}
