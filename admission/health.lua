-- health.lua v1: one observation of a shop's health (a probe of its URL or a
-- pushed error rate), counted for all nodes.
-- KEYS[1] health hash: held (0/1), gen (changes of held), fails and oks
-- (observations in a row), since (unix ms of the last change), reason (the
-- failing observation that held admission), last, source, checked (unix ms).
-- ARGV[1] 1 healthy / 0 failing / reset (the check was removed: release
-- any hold and clear the counts), ARGV[2] fail_after, ARGV[3]
-- recover_after, ARGV[4] source (probe|push|staff), ARGV[5] detail.
-- fail_after failing observations in a row hold admission; recover_after
-- healthy ones in a row release it. advance.lua reads held on every tick.
-- Reply {held, gen, changed (0/1)}.
local state = KEYS[1]
local now = now_ms()
local h = redis.call('HMGET', state, 'held', 'gen', 'fails', 'oks')
local held, gen = h[1] or '0', tonumber(h[2] or '0')
local fails, oks = tonumber(h[3] or '0'), tonumber(h[4] or '0')
local changed = 0
if ARGV[1] == 'reset' then
  oks, fails = 0, 0
  if held == '1' then held, changed = '0', 1 end
else
  if ARGV[1] == '1' then
    oks, fails = oks + 1, 0
  else
    fails, oks = fails + 1, 0
  end
  if held == '0' and fails >= tonumber(ARGV[2]) then
    held, changed = '1', 1
    redis.call('HSET', state, 'reason', ARGV[5])
  elseif held == '1' and oks >= tonumber(ARGV[3]) then
    held, changed = '0', 1
  end
end
if changed == 1 then
  gen = gen + 1
  redis.call('HSET', state, 'since', now)
end
redis.call('HSET', state, 'held', held, 'gen', gen, 'fails', fails, 'oks', oks,
  'last', ARGV[5], 'source', ARGV[4], 'checked', now)
return {tonumber(held), gen, changed}
