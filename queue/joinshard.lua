-- joinshard.lua v1: join.lua for one join shard of an event spread over S > 1
-- shards (see Order). Every key is the shard's own, under its hash tag.
-- KEYS[1] shard sequence counter, KEYS[2] user hash bucket, KEYS[3] frozen
-- shard window size W_s, KEYS[4] seconds list: one "second:first seq" entry
-- per second (since the queue opened) in which someone joined the shard
-- after its window froze, oldest first.
-- ARGV and reply as join.lua; W in the reply is the shard's W_s.
local counter, users, window, seconds = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = now_ms()
local opens, wend, jend = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

local w = redis.call('GET', window)
if not w and now >= wend then
  w = redis.call('GET', counter) or '0'
  redis.call('SET', window, w)
end
w = tonumber(w or '-1')

local packed = redis.call('HGET', users, ARGV[1])
if packed then
  packed = tonumber(packed)
  local rel = packed % 4194304
  return {1, (packed - rel) / 4194304, math.floor(opens / 1000) + rel, w}
end
if now < opens then
  return {2, 0, 0, w}
end
if now >= jend then
  return {3, 0, 0, w}
end
local seq = redis.call('INCR', counter)
local rel = math.min(math.floor((now - opens) / 1000), 4194303)
if w >= 0 then
  -- A later joiner: the seconds list says where each second starts. Its
  -- seconds never go back, even if this server's clock does.
  local last = redis.call('LINDEX', seconds, -1)
  local lastrel = last and tonumber(string.match(last, '^(%d+):')) or -1
  if rel > lastrel then
    redis.call('RPUSH', seconds, string.format('%d:%.0f', rel, seq))
  else
    rel = lastrel
  end
end
redis.call('HSET', users, ARGV[1], string.format('%.0f', seq * 4194304 + rel))
return {0, seq, math.floor(opens / 1000) + rel, w}
