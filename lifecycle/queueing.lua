-- queueing.lua v1: record when a safety-net room starts and stops queueing,
-- each change once for all nodes, in the outbox record.lua writes to.
-- KEYS[1] state hash, KEYS[2] outbox hash (id -> JSON), KEYS[3] recent list.
-- All keys share the event's hash tag.
-- ARGV[1] event id, ARGV[2] people waiting (joined, not admitted) as
-- observed, ARGV[3] active people as observed, ARGV[4] the observation's
-- Redis TIME (unix ms), ARGV[5] quiet (ms): how long nobody must have been
-- seen waiting before the room counts as no longer queueing.
-- Observations older than the newest one applied are ignored, so a node
-- with a stale view cannot flip the state back. State fields: q (0/1),
-- qseen (newest observation applied), qlast (last seen waiting), qn (changes).
-- Reply: outbox length.
local state, outbox, recent = KEYS[1], KEYS[2], KEYS[3]
local now = now_ms()
local ev, waiting, active = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local at, quiet = tonumber(ARGV[4]), tonumber(ARGV[5])

local st = redis.call('HMGET', state, 'q', 'qseen', 'qlast')
local q, seen, last = st[1] or '0', tonumber(st[2] or '0'), tonumber(st[3] or '0')
local function emit(typ, data)
  local n = redis.call('HINCRBY', state, 'qn', 1)
  local id = ev .. '.' .. typ .. '.' .. n
  local body = cjson.encode({id = id, type = typ, event = ev, at_unix_ms = now, data = data})
  redis.call('HSET', outbox, id, body)
  redis.call('LPUSH', recent, body)
  redis.call('LTRIM', recent, 0, 199)
end

if at > seen then
  redis.call('HSET', state, 'qseen', at)
  if waiting > 0 then
    redis.call('HSET', state, 'qlast', at)
    if q == '0' then
      redis.call('HSET', state, 'q', '1')
      emit('queueing_started', {waiting = waiting, active = active})
    end
  elseif q == '1' and at - last >= quiet then
    redis.call('HSET', state, 'q', '0')
    emit('queueing_stopped', {active = active})
  end
end
return redis.call('HLEN', outbox)
