-- cancel.lua v1: staff cancel granted claims (pending or confirmed) of one
-- bucket, exactly once per claim, and write one 'order_cancelled' order event
-- per claim into the outbox.
-- KEYS[1] bucket stock, KEYS[2] claim records, KEYS[3] outbox, KEYS[4]
-- bucket stats, KEYS[5] expiry index, KEYS[6] frozen marker (the bucket's
-- keys in the order claim.lua takes them). All share the bucket's hash tag.
-- ARGV[1] event id, ARGV[2] cancellation time (RFC 3339, for the order
-- event), ARGV[3] reason (staff's text), ARGV[4] restock (1: the unit goes
-- back to the bucket's stock, 0: it stays sold and void), ARGV[5] who
-- cancelled (the staff name); then ARGV[5+i] claim i's id.
-- Reply: 3 values per claim {code, status, payload}: 0 cancelled now
-- (payload is the order event, also in the outbox under
-- '<claim id>:cancelled'), 1 no such claim, 2 released (never cancelled), 3
-- cancelled before, 5 frozen, 6 stale (the Redis server changed since the
-- stock was laid, or lost it: rebuild first), 7 a record this script cannot
-- rewrite (its status member is not written as claim.lua writes it).
-- All or nothing: unless every claim can be cancelled (code 0), nothing
-- changes and the others answer 4 (not done: another claim refused).
-- A cancelled claim keeps its place in its user's held set and in its
-- signals' sets: it still counts against the user's and the signals'
-- limits, so a ring cannot buy back what staff took from it. Only the unit
-- may go back to stock (restock), counted in stats 'restocked'.
-- The fence against a Redis failover, as in release.lua: nothing is
-- cancelled on a promoted replica before the rebuild.
-- No number passes through cjson.encode: the record changes by its status
-- member and gains "cancel_reason" and "restock" members.
local stock, records, outbox, stats, expiry, frozen = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local n = #ARGV - 5
local out = {}
local function all(code)
  for _ = 1, n do
    table.insert(out, code)
    table.insert(out, '')
    table.insert(out, '')
  end
  return out
end
if redis.call('EXISTS', frozen) == 1 then
  return all(5)
end
if redis.call('HGET', stats, 'epoch') ~= replid() then
  return all(6)
end
local raws, codes, statuses = {}, {}, {}
local refused = false
for i = 1, n do
  local id = ARGV[5 + i]
  local raw = redis.call('HGET', records, id)
  local rec = raw and cjson.decode(raw)
  local code, st = 0, ''
  if not rec then
    code = 1
  else
    st = rec['status']
    if st == 'released' then
      code = 2
    elseif st == 'cancelled' then
      code = 3
    elseif (st ~= 'pending' and st ~= 'confirmed') or not string.find(raw, '"status":"' .. st .. '"', 1, true) then
      code = 7
    end
  end
  for j = 1, i - 1 do
    if ARGV[5 + j] == id then code = 3 end -- named twice: cancelled once
  end
  raws[i], codes[i], statuses[i] = raw, code, st
  if code ~= 0 then refused = true end
end
for i = 1, n do
  local code = codes[i]
  if refused and code == 0 then code = 4 end
  local payload = ''
  if not refused then
    local id, raw = ARGV[5 + i], raws[i]
    local rec = cjson.decode(raw)
    local restock = 'false'
    if ARGV[4] == '1' then restock = 'true' end
    local done = string.gsub(raw, '"status":"' .. statuses[i] .. '"', '"status":"cancelled"', 1)
    done = string.sub(done, 1, -2) .. ',"cancel_reason":' .. cjson.encode(ARGV[3]) .. ',"restock":' .. restock .. '}'
    redis.call('HSET', records, id, done)
    redis.call('ZREM', expiry, id)
    redis.call('HINCRBY', stats, 'cancelled', 1)
    if restock == 'true' then
      redis.call('INCR', stock)
      redis.call('HINCRBY', stats, 'restocked', 1)
    end
    local pos = string.match(raw, '"pos":(%-?[%d.eE+%-]+)') or string.format('%.0f', tonumber(rec['pos']) or 0)
    payload = '{"type":"order_cancelled","event":' .. cjson.encode(ARGV[1]) .. ',"claim_id":' .. cjson.encode(id) ..
      ',"user":' .. cjson.encode(rec['user']) .. ',"pos":' .. pos .. ',"units":1,"at":' .. cjson.encode(ARGV[2])
    if type(rec['idem']) == 'string' then payload = payload .. ',"idem":' .. cjson.encode(rec['idem']) end
    payload = payload .. ',"reason":' .. cjson.encode(ARGV[3]) .. ',"restock":' .. restock ..
      ',"was":' .. cjson.encode(statuses[i]) .. ',"by":' .. cjson.encode(ARGV[5]) .. '}'
    redis.call('HSET', outbox, id .. ':cancelled', payload)
  end
  table.insert(out, code)
  table.insert(out, statuses[i])
  table.insert(out, payload)
end
return out
