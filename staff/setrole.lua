-- setrole.lua v1: change an account's role; the last admin stays one.
-- Counting the admins and writing happen in this one step, so two admins
-- demoting each other at once cannot leave none.
-- KEYS[1] the account's hash, KEYS[2] the set of admin names
-- ARGV[1] the account's name, ARGV[2] the new role
-- Reply {code, old role}: 0 changed (or already so), 1 no such account,
-- 2 refused: it is the last admin.
local account, admins = KEYS[1], KEYS[2]
local name, role = ARGV[1], ARGV[2]
local old = redis.call('HGET', account, 'role')
if not old then return {1, ''} end
if old == 'admin' and role ~= 'admin' and redis.call('SCARD', admins) <= 1 then
  return {2, old}
end
redis.call('HSET', account, 'role', role)
if role == 'admin' then
  redis.call('SADD', admins, name)
else
  redis.call('SREM', admins, name)
end
return {0, old}
