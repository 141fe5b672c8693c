-- create.lua v1: add an account unless one of its name exists.
-- KEYS[1] the account's hash, KEYS[2] the set of names, KEYS[3] the set of
-- admin names
-- ARGV[1] name, ARGV[2] role, ARGV[3] password hash, ARGV[4] its new
-- incarnation (sessions and API keys are bound to it)
-- Reply 1 created, 0 the name exists.
local account, accounts, admins = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', account) == 1 then return 0 end
redis.call('HSET', account, 'role', ARGV[2], 'password', ARGV[3], 'gen', ARGV[4])
redis.call('SADD', accounts, ARGV[1])
if ARGV[2] == 'admin' then redis.call('SADD', admins, ARGV[1]) end
return 1
