-- release.lua v3: return the units of pending claims to their bucket, exactly
-- once per claim, and write a 'released' order event into the outbox.
-- KEYS[1] bucket stock, KEYS[2] claim records, KEYS[3] outbox, KEYS[4]
-- bucket stats, KEYS[5] expiry index, KEYS[6] frozen marker; then
-- KEYS[6+i] the held-claims set of claim i's user. All share the bucket's
-- hash tag. A released claim also leaves the signal sets its record lists
-- ("sig", written by claim.lua), as it leaves its user's held set: each
-- signal gets its count back. Those keys are read from the record, not
-- declared, and each must carry the bucket's own hash tag (the prefix of
-- KEYS[1]): on a Redis Cluster they live in the script's slot.
-- ARGV[1] event id, ARGV[2] release time (RFC 3339, for the order event),
-- ARGV[3] reason (user, admin or expired); then for claim i: ARGV[2+2i]
-- claim id, ARGV[3+2i] its user (the record must name the same user).
-- Reply: 3 values per claim {code, status, payload}: 0 released now (payload
-- is the order event, also in the outbox under '<claim id>:released'), 1 no
-- such claim of that user, 2 released before, 3 confirmed (never released),
-- 4 not due (reason expired, deadline not reached), 5 frozen, 6 stale (the
-- Redis server changed since the stock was laid, or lost it: rebuild first),
-- 7 a pending record this script cannot rewrite (it lacks the member
-- "status":"pending" as written here): nothing changed.
-- The fence against a Redis failover, as in claim.lua: a promoted replica
-- may show pending a claim the old primary confirmed, so nothing is
-- released on it before the rebuild.
-- No number passes through cjson.encode (it keeps 14 significant digits):
-- the record changes by its status member only, and the order event copies
-- the record's position as written.
local stock, records, outbox, stats, expiry, frozen = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local out = {}
local n = (#ARGV - 3) / 2
local tag = string.sub(stock, 1, #stock - #'stock')
local function reply(code, status, payload)
  table.insert(out, code)
  table.insert(out, status)
  table.insert(out, payload)
end
if redis.call('EXISTS', frozen) == 1 then
  for _ = 1, n do reply(5, '', '') end
  return out
end
if redis.call('HGET', stats, 'epoch') ~= replid() then
  for _ = 1, n do reply(6, '', '') end
  return out
end
local now = now_ms()
for i = 1, n do
  local id, user = ARGV[2 + 2 * i], ARGV[3 + 2 * i]
  local raw = redis.call('HGET', records, id)
  local rec = raw and cjson.decode(raw)
  if not rec or rec['user'] ~= user then
    reply(1, '', '')
  elseif rec['status'] == 'released' then
    reply(2, 'released', '')
  elseif rec['status'] ~= 'pending' then
    reply(3, rec['status'], '')
  elseif ARGV[3] == 'expired' and tonumber(redis.call('ZSCORE', expiry, id) or now + 1) > now then
    reply(4, 'pending', '')
  elseif not string.find(raw, '"status":"pending"', 1, true) then
    reply(7, 'pending', '')
  else
    local released = string.gsub(raw, '"status":"pending"', '"status":"released"', 1)
    redis.call('HSET', records, id, released)
    redis.call('INCR', stock)
    redis.call('SREM', KEYS[6 + i], id)
    if type(rec['sig']) == 'table' then
      for _, key in ipairs(rec['sig']) do
        if type(key) == 'string' and string.sub(key, 1, #tag) == tag then
          redis.call('SREM', key, id)
        end
      end
    end
    redis.call('ZREM', expiry, id)
    redis.call('HINCRBY', stats, 'released', 1)
    local pos = string.match(raw, '"pos":(%-?[%d.eE+%-]+)') or string.format('%.0f', tonumber(rec['pos']) or 0)
    local ev = '{"type":"released","event":' .. cjson.encode(ARGV[1]) .. ',"claim_id":' .. cjson.encode(id) ..
      ',"user":' .. cjson.encode(user) .. ',"pos":' .. pos .. ',"units":1,"at":' .. cjson.encode(ARGV[2])
    if type(rec['idem']) == 'string' then ev = ev .. ',"idem":' .. cjson.encode(rec['idem']) end
    ev = ev .. ',"reason":' .. cjson.encode(ARGV[3]) .. '}'
    redis.call('HSET', outbox, id .. ':released', ev)
    reply(0, 'released', ev)
  end
end
return out
