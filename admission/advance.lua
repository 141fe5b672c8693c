-- advance.lua: move an event's admission frontier forward. Leaderless: every
-- node may call it on every tick; Redis TIME and the stored last-advance
-- instant make the total advance rate * elapsed however many nodes call.
--
-- KEYS[1] frontier hash: b = admissions paid for by the rate, n = no-shows
--         credited back, c = positions checked for no-shows, g = highest
--         position admitted at least the grace ago, t = last
--         advance (unix ms), f = frontier (b + n, capped), h = last F pushed
--         to the history
-- KEYS[2] queue sequence counter, KEYS[3] frozen window size W,
-- KEYS[4] presence bitmap (bit = position: an admission token was issued),
-- KEYS[5] history list of "unix ms:F" samples, oldest first.
-- All keys share the event's hash tag.
-- ARGV[1] admission start = window end (unix ms), ARGV[2] rate per second,
-- ARGV[3] 1 when paused or sold out (time passes, nobody is admitted),
-- ARGV[4] no-show grace (ms), ARGV[5] most positions checked per call,
-- ARGV[6] cap on F from max_active (-1: none), ARGV[7..] positions present.
--
-- Fixed rate means present people: a position admitted longer than the grace
-- ago whose bit is still 0 is a no-show, and the frontier moves one further
-- for it. The check is bounded per call and walks each position once, so
-- the frontier never runs away; it never passes the number who joined, so an
-- empty queue banks no credit.
-- Reply {frontier * 1000, joined, W (-1 while open), now (unix ms), no-shows}.
for i = 7, #ARGV do
  redis.call('SETBIT', KEYS[4], ARGV[i], 1)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start, rate, hold = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local grace, maxcheck, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])

local joined = tonumber(redis.call('GET', KEYS[2]) or '0')
local w = redis.call('GET', KEYS[3])
if not w and now >= start then
  w = tostring(joined)
  redis.call('SET', KEYS[3], w)
end
w = tonumber(w or '-1')

local st = redis.call('HMGET', KEYS[1], 'b', 'n', 'c', 't', 'f', 'h', 'g')
local b, n, c = tonumber(st[1] or '0'), tonumber(st[2] or '0'), tonumber(st[3] or '0')
local bound = tonumber(st[7] or '0')
local f = tonumber(st[5] or '0')
if now < start then
  return {math.floor(f * 1000), joined, w, now, n}
end
local last = tonumber(st[4] or tostring(start))
if now <= last then
  return {math.floor(f * 1000), joined, w, now, n}
end

-- No-shows: positions admitted at least grace ago (the newest history
-- sample older than the grace gives that bound) and never marked present.
while true do
  local head = redis.call('LINDEX', KEYS[5], 0)
  if not head then break end
  local sep = string.find(head, ':')
  if tonumber(string.sub(head, 1, sep - 1)) > now - grace then break end
  bound = math.max(bound, math.floor(tonumber(string.sub(head, sep + 1))))
  redis.call('LPOP', KEYS[5])
end
if bound > c then
  local upto = math.min(bound, c + maxcheck)
  for p = c + 1, upto do
    if redis.call('GETBIT', KEYS[4], p) == 0 then n = n + 1 end
  end
  c = upto
end

if not hold then
  b = b + rate * (now - last) / 1000
end
if b + n > joined then b = math.max(joined - n, 0) end
f = math.min(b + n, joined)
if cap >= 0 and f > cap then
  f = math.max(cap, tonumber(st[5] or '0'))
  b = math.max(f - n, 0)
end
local h = tonumber(st[6] or '-1')
if math.floor(f) > h then
  redis.call('RPUSH', KEYS[5], now .. ':' .. math.floor(f))
  h = math.floor(f)
end
redis.call('HSET', KEYS[1], 'b', string.format('%.6f', b), 'n', n, 'c', c, 't', now,
  'f', string.format('%.6f', f), 'h', h, 'g', bound)
return {math.floor(f * 1000), joined, w, now, n}
