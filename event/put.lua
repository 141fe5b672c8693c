-- put.lua: compare-and-set of one event's configuration, refused once a
-- lock has taken hold by Redis TIME (never a node's clock).
-- KEYS[1] config key (JSON string)
-- ARGV[1] expected version (0: must not exist), ARGV[2] new JSON,
-- ARGV[3] lock instant (unix ms; 0: no lock applies).
-- Reply {code, now (unix ms)}: code 1 stored, 0 the stored version differs,
-- -1 locked (now is at or past the lock instant).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('GET', KEYS[1])
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
redis.call('SET', KEYS[1], ARGV[2])
return {1, now}
