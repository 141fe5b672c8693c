-- confirm.lua: mark a pending claim confirmed (the order worker recorded its
-- order); a confirmed claim never expires.
-- KEYS[1] claim records, KEYS[2] expiry index, KEYS[3] frozen marker. All
-- share the bucket's hash tag.
-- ARGV[1] claim id.
-- Reply {code, status}: 0 with the status now (confirmed, or released when
-- the release came first), 1 no such claim, 5 frozen.
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {5, ''}
end
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then
  return {1, ''}
end
local rec = cjson.decode(raw)
if rec['status'] == 'pending' then
  rec['status'] = 'confirmed'
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec))
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return {0, rec['status']}
