-- advance.lua: move an event's admission frontier forward. Leaderless: every
-- node may call it on every tick; Redis TIME and the stored last-advance
-- instant make the total advance rate * elapsed however many nodes call.
-- KEYS[1] frontier hash {f = frontier, t = last advance (unix ms)},
-- KEYS[2] queue sequence counter, KEYS[3] frozen window size W.
-- All keys share the event's hash tag.
-- ARGV[1] admission start = window end (unix ms), ARGV[2] rate per second,
-- ARGV[3] 1 when paused or sold out (time passes, nobody is admitted).
-- The frontier never passes the number of people who joined, so an empty
-- queue does not bank credit for a later burst.
-- Reply {frontier * 1000, joined, W (-1 while open), now (unix ms)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start, rate, hold = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'

local joined = tonumber(redis.call('GET', KEYS[2]) or '0')
local w = redis.call('GET', KEYS[3])
if not w and now >= start then
  w = tostring(joined)
  redis.call('SET', KEYS[3], w)
end
w = tonumber(w or '-1')

local f = tonumber(redis.call('HGET', KEYS[1], 'f') or '0')
if now < start then
  return {math.floor(f * 1000), joined, w, now}
end
local last = tonumber(redis.call('HGET', KEYS[1], 't') or tostring(start))
if now > last then
  if not hold then
    f = math.min(f + rate * (now - last) / 1000, joined)
  end
  redis.call('HSET', KEYS[1], 'f', string.format('%.6f', f), 't', now)
end
return {math.floor(f * 1000), joined, w, now}
