-- join.lua v2: give a user one sequence number in an event's queue, or in
-- one join shard of a queue spread over S > 1 shards (see Order).
-- KEYS[1] sequence counter, KEYS[2] user hash (user -> packed entry),
-- KEYS[3] frozen window size W; for a join shard also KEYS[4], the seconds
-- list: one "second:first seq" entry per second (since the queue opened)
-- in which someone joined the shard after its window froze, oldest first.
-- All keys share one hash tag: the event's, or the join shard's own.
-- ARGV[1] user, ARGV[2] queue opens (unix ms), ARGV[3] window end (unix ms),
-- ARGV[4] join end (unix ms).
-- Packed entry: seq * 2^22 + seconds since the queue opened (capped), so a
-- repeated join rebuilds the very same ticket from one small integer.
-- Reply {code, seq, joined_s, W}: code 0 new, 1 existing, 2 not open yet,
-- 3 joining has ended. W (a shard's W_s) is -1 while the window is open.
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
if seconds and w >= 0 then
  -- A later joiner of a shard: the seconds list says where each second
  -- starts. Its seconds never go back, even if this server's clock does.
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
