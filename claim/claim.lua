-- claim.lua v3: one or more claims on one stock bucket (a micro-batch), decided
-- in order, each exactly as if it had run alone.
-- KEYS[1] bucket stock (units left), KEYS[2] claim records (hash claim id ->
-- JSON {user, pos, at, status, idem[, sig]}), KEYS[3] outbox (hash claim id ->
-- order event JSON), KEYS[4] bucket stats (hash: granted, released), KEYS[5]
-- expiry index (zset claim id -> deadline ms), KEYS[6] frozen marker (set
-- while a rebuild runs); then for each request, in order: the user's held
-- claims (set), the user's claim history (set), the idempotency key -> claim
-- id, then one key per signal the request carries (a set of the claim ids
-- held with that signal value: '<tag>sig:<dimension>:<keyed hash>').
-- All keys share the bucket's hash tag: safe on Redis Cluster.
-- ARGV for each request, in order: user, per-user limit, new claim id, order
-- event JSON (an object without "epoch": the script adds the bucket's),
-- position (a decimal integer), idempotency key, idempotency TTL (s), claim
-- TTL (ms), m the number of signals, the signals' expiry (unix ms), then m
-- pairs: the claims allowed per value, the dimension's name.
-- The record's numbers are written as decimal text, never through cjson,
-- which keeps 14 significant digits: a pass holder's position 2^50 has 16.
-- Reply: 5 values per request {code, claim id, units left, status, payload}
-- code 0 granted, 1 replay of an earlier request (payload is set while the
-- order event is still in the outbox, '' once published), 2 per-user limit
-- reached (claim id field holds the user's ids joined by ','), 3 bucket
-- empty, 4 frozen (rebuild running), 5 stale (the Redis server changed
-- since the stock was laid, or lost it: rebuild first), 6 signal limit
-- reached (claim id field holds the dimension's name).
-- A grant adds its claim id to each signal's set (which expires at the
-- signals' expiry) and lists those keys in its record ("sig"), so that
-- release.lua gives each signal's count back with the user's.
-- The fence against a Redis failover (replid(), see the prelude and the
-- package doc): a bucket whose recorded id is not this server's refuses.
local stock, records, outbox, stats, expiry, frozen = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local out = {}
-- Walk the variable layout once: each request's first ARGV and first KEYS.
local at, kat = {}, {}
local a, k = 0, 6
while a < #ARGV do
  local m = tonumber(ARGV[a + 9])
  if not m or m < 0 or a + 10 + 2 * m > #ARGV or k + 3 + m > #KEYS then
    return redis.error_reply('claim.lua: malformed request layout')
  end
  if not string.match(ARGV[a + 5], '^%-?%d+$') then
    return redis.error_reply('claim.lua: position must be a decimal integer')
  end
  table.insert(at, a)
  table.insert(kat, k)
  a, k = a + 10 + 2 * m, k + 3 + m
end
local n = #at
local function refuse(code)
  for _ = 1, n do
    for _, v in ipairs({code, '', 0, '', ''}) do table.insert(out, v) end
  end
  return out
end
if redis.call('EXISTS', frozen) == 1 then
  return refuse(4)
end
if redis.call('HGET', stats, 'epoch') ~= replid() then
  return refuse(5)
end
-- The stream-side fence (see the package doc): each granted order event
-- carries its bucket's epoch, the stream sequence of the rebuild's epoch
-- marker its stock descends from (absent: laid, never rebuilt).
local mark = redis.call('HGET', stats, 'mark') or '0'
local now = now_ms()
local function reply(code, id, left, status, payload)
  table.insert(out, code)
  table.insert(out, id)
  table.insert(out, left)
  table.insert(out, status)
  table.insert(out, payload)
end
-- over_signal names the first signal of the request at ARGV a, KEYS k (m
-- signals) whose value holds its allowed claims already, or returns nil.
local function over_signal(a, k, m)
  for j = 1, m do
    if redis.call('SCARD', KEYS[k + 3 + j]) >= tonumber(ARGV[a + 9 + 2 * j]) then
      return ARGV[a + 10 + 2 * j]
    end
  end
  return nil
end
for i = 1, n do
  local a, k = at[i], kat[i]
  local m = tonumber(ARGV[a + 9])
  local user, limit, id, payload = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4]
  local held, hist, idem = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local prior = redis.call('GET', idem)
  if prior then
    local rec = redis.call('HGET', records, prior)
    local st = 'pending'
    if rec then st = cjson.decode(rec)['status'] end
    reply(1, prior, 0, st, redis.call('HGET', outbox, prior) or '')
  elseif redis.call('SCARD', held) >= limit then
    reply(2, table.concat(redis.call('SMEMBERS', held), ','), 0, '', '')
  elseif over_signal(a, k, m) then
    reply(6, over_signal(a, k, m), 0, '', '')
  elseif tonumber(redis.call('GET', stock) or '0') <= 0 then
    reply(3, '', 0, '', '')
  else
    if mark ~= '0' then
      payload = string.sub(payload, 1, -2) .. ',"epoch":' .. mark .. '}'
    end
    local left = redis.call('DECR', stock)
    redis.call('SADD', held, id)
    redis.call('SADD', hist, id)
    redis.call('SET', idem, id, 'EX', ARGV[a + 7])
    local sig = ''
    if m > 0 then
      local names = {}
      for j = 1, m do
        local key = KEYS[k + 3 + j]
        redis.call('SADD', key, id)
        redis.call('PEXPIREAT', key, ARGV[a + 10])
        table.insert(names, cjson.encode(key))
      end
      sig = ',"sig":[' .. table.concat(names, ',') .. ']'
    end
    redis.call('HSET', records, id, '{"user":' .. cjson.encode(user) .. ',"pos":' .. ARGV[a + 5] ..
      ',"at":' .. string.format('%.0f', now) .. ',"status":"pending","idem":' .. cjson.encode(ARGV[a + 6]) .. sig .. '}')
    redis.call('HSET', outbox, id, payload)
    redis.call('HINCRBY', stats, 'granted', 1)
    redis.call('ZADD', expiry, now + tonumber(ARGV[a + 8]), id)
    reply(0, id, left, 'pending', payload)
  end
end
return out
