-- delete.lua v1: remove an account and its API keys; the last admin stays.
-- Counting the admins and removing happen in this one step, so two admins
-- removing each other at once cannot leave none.
-- KEYS[1] the account's hash, KEYS[2] the set of names, KEYS[3] the set of
-- admin names, KEYS[4..] the hashes of its API keys as read before
-- ARGV[1] the account's name, ARGV[2] its keys field as read before
-- Reply {code, role}: 0 removed, 1 no such account, 2 refused: the last
-- admin, 3 its keys changed since they were read (read and try again).
local account, accounts, admins = KEYS[1], KEYS[2], KEYS[3]
local name = ARGV[1]
local v = redis.call('HMGET', account, 'role', 'keys')
local role, keys = v[1], v[2] or ''
if not role then return {1, ''} end
if keys ~= ARGV[2] then return {3, role} end
if role == 'admin' and redis.call('SCARD', admins) <= 1 then
  return {2, role}
end
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('DEL', account)
redis.call('SREM', accounts, name)
redis.call('SREM', admins, name)
return {0, role}
