-- record.lua v5: record one event's lifecycle transitions, each exactly once
-- across every node, in an outbox that nodes publish from.
-- KEYS[1] state hash, KEYS[2] outbox hash (id -> JSON), KEYS[3] recent list.
-- All keys share the event's hash tag.
-- ARGV[1] event id, ARGV[2] config version, ARGV[3] paused (0/1),
-- ARGV[4] opened, ARGV[5] window closed, ARGV[6] sold out, ARGV[7] ended
-- (each 0/1, as observed), ARGV[8] seed, ARGV[9] seed commitment,
-- ARGV[10] window size, ARGV[11] held by the shop's health check (0/1),
-- ARGV[12] the health hold's generation (its changes so far),
-- ARGV[13] closed by staff (0/1),
-- ARGV[14] the number of your_turn cursors that follow (one per queue: the
-- default lane, then each lane), each as: the state hash field that keeps
-- it, the cursor expected (-1: none), the new cursor, the number n of
-- events, then n pairs (event number, data as JSON) for the positions after
-- the expected cursor up to the new one.
-- One-shot transitions are claimed with HSETNX; pause/resume follows the
-- newest config version seen (a stale node cannot flip it back) and counts
-- its changes, and so does staff's closure (closed/reopened); the health
-- hold follows the newest (config version, health generation) seen, both at least the stored ones, so a stale node cannot
-- flip it either, and removing the check (a new version) releases it.
-- Both emit paused/resumed, with data.reason staff or health; your_turn
-- moves a cursor by compare-and-set.
-- Reply {outbox length, then each your_turn cursor as stored}.
-- Bodies are written member by member, not by cjson.encode: an empty Lua
-- table is {} on redis-server but [] on the embedded server (miniredis),
-- and cjson keeps 14 significant digits of a number. Strings go through
-- cjson.encode; integers are written in full (int).
local state, outbox, recent = KEYS[1], KEYS[2], KEYS[3]
local now = now_ms()
local ev = ARGV[1]

-- int(v): integer v (a number, or a decimal integer's text) as JSON.
local function int(v)
  if type(v) == 'string' and string.match(v, '^%-?%d+$') then return v end
  return string.format('%.0f', tonumber(v))
end

-- object(m): the JSON object of members m = {name, JSON value, ...}.
local function object(m)
  local parts = {}
  for i = 1, #m, 2 do parts[#parts + 1] = '"' .. m[i] .. '":' .. m[i + 1] end
  return '{' .. table.concat(parts, ',') .. '}'
end

local function emit(typ, n, data)
  local id = ev .. '.' .. typ .. '.' .. n
  local body = object({'id', cjson.encode(id), 'type', cjson.encode(typ), 'event', cjson.encode(ev),
    'at_unix_ms', int(now), 'data', data})
  redis.call('HSET', outbox, id, body)
  redis.call('LPUSH', recent, body)
  redis.call('LTRIM', recent, 0, 199)
end

local function once(flag, typ, data)
  if flag == '1' and redis.call('HSETNX', state, typ, now) == 1 then
    emit(typ, '1', data)
  end
end

local version = tonumber(ARGV[2])
local seen = tonumber(redis.call('HGET', state, 'version') or '0')
if version > seen then
  redis.call('HSET', state, 'version', version)
  local was = redis.call('HGET', state, 'paused') or '0'
  if ARGV[3] ~= was then
    redis.call('HSET', state, 'paused', ARGV[3])
    local n = redis.call('HINCRBY', state, 'pauses', 1)
    local typ = 'resumed'
    if ARGV[3] == '1' then typ = 'paused' end
    emit(typ, n, object({'version', int(version), 'reason', '"staff"'}))
  end
  local shut = redis.call('HGET', state, 'closed') or '0'
  if ARGV[13] ~= shut then
    redis.call('HSET', state, 'closed', ARGV[13])
    local n = redis.call('HINCRBY', state, 'closures', 1)
    local typ = 'reopened'
    if ARGV[13] == '1' then typ = 'closed' end
    emit(typ, n, object({'version', int(version)}))
  end
end

local hgen = tonumber(ARGV[12])
local hv = tonumber(redis.call('HGET', state, 'hver') or '0')
local hg = tonumber(redis.call('HGET', state, 'hgen') or '0')
if version >= hv and hgen >= hg then
  redis.call('HSET', state, 'hver', version, 'hgen', hgen)
  local was = redis.call('HGET', state, 'hheld') or '0'
  if ARGV[11] ~= was then
    redis.call('HSET', state, 'hheld', ARGV[11])
    local n = redis.call('HINCRBY', state, 'pauses', 1)
    local typ = 'resumed'
    if ARGV[11] == '1' then typ = 'paused' end
    emit(typ, n, object({'version', int(version), 'reason', '"health"', 'health_changes', int(hgen)}))
  end
end

once(ARGV[4], 'sale_opened', '{}')
once(ARGV[5], 'window_closed', object({'seed', cjson.encode(ARGV[8]), 'seed_commitment', cjson.encode(ARGV[9]),
  'window_size', int(ARGV[10])}))
once(ARGV[6], 'sold_out', '{}')
once(ARGV[7], 'sale_ended', '{}')

local reply = {0}
local i = 15
for _ = 1, tonumber(ARGV[14]) do
  local field, expected, nxt, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  i = i + 4
  local cursor = tonumber(redis.call('HGET', state, field) or '0')
  if expected == cursor and nxt > cursor then
    for k = i, i + 2 * n - 1, 2 do
      emit('your_turn', ARGV[k], ARGV[k + 1])
    end
    cursor = nxt
    redis.call('HSET', state, field, cursor)
  end
  i = i + 2 * n
  reply[#reply + 1] = cursor
end
reply[1] = redis.call('HLEN', outbox)
return reply
