-- setrole.lua v1: change an account's role; the last admin stays one.
-- Counting the admins and writing happen in this one step, so two admins
-- demoting each other at once cannot leave none. A new role is a new
-- incarnation: the account's sessions and API keys end.
-- KEYS[1] the account's hash, KEYS[2] the set of names, KEYS[3] the set of
-- admin names, KEYS[4..] the hashes of its API keys as read before
-- ARGV[1] the account's name, ARGV[2] its keys field as read before,
-- ARGV[3] the new role, ARGV[4] the new incarnation
-- Reply {code, old role}: 0 changed (or already so), 1 no such account,
-- 2 refused: it is the last admin, 3 its keys changed since they were
-- read (read and try again).
local account, admins = KEYS[1], KEYS[3]
local name, role = ARGV[1], ARGV[3]
local v = redis.call('HMGET', account, 'role', 'keys')
local old, keys = v[1], v[2] or ''
if not old then return {1, ''} end
if old == role then return {0, old} end
if keys ~= ARGV[2] then return {3, old} end
if old == 'admin' and redis.call('SCARD', admins) <= 1 then
  return {2, old}
end
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('HSET', account, 'role', role, 'gen', ARGV[4], 'keys', '')
if role == 'admin' then
  redis.call('SADD', admins, name)
else
  redis.call('SREM', admins, name)
end
return {0, old}
