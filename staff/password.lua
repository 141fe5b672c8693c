-- password.lua v1: set an account's password. A new password is a new
-- incarnation: the account's sessions and API keys end.
-- KEYS[1] the account's hash, KEYS[2] the set of names, KEYS[3] the set of
-- admin names, KEYS[4..] the hashes of its API keys as read before
-- ARGV[1] the account's name, ARGV[2] its keys field as read before,
-- ARGV[3] the new password hash, ARGV[4] the new incarnation, ARGV[5] the
-- incarnation the caller knows ('*': any, an admin's reset)
-- Reply {code, role}: 0 set, 1 no such account, 3 its keys changed since
-- they were read (read and try again), 4 the incarnation is not ARGV[5].
local account = KEYS[1]
local v = redis.call('HMGET', account, 'role', 'keys', 'gen')
local role, keys, gen = v[1], v[2] or '', v[3] or ''
if not role then return {1, ''} end
if ARGV[5] ~= '*' and gen ~= ARGV[5] then return {4, role} end
if keys ~= ARGV[2] then return {3, role} end
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('HSET', account, 'password', ARGV[3], 'gen', ARGV[4], 'keys', '')
return {0, role}
