-- newkey.lua v1: add an API key to an account, bound to its incarnation.
-- KEYS[1] the account's hash, KEYS[2] the key's hash
-- ARGV[1] the account's name, ARGV[2] the key's prefix, ARGV[3] the
-- key's SHA-256 (hex)
-- Reply 1 added, 0 no such account.
local account, key = KEYS[1], KEYS[2]
local v = redis.call('HMGET', account, 'role', 'keys', 'gen')
if not v[1] then return 0 end
local keys = v[2] or ''
if keys ~= '' then keys = keys .. ' ' end
redis.call('HSET', key, 'account', ARGV[1], 'sha256', ARGV[3], 'gen', v[3] or '')
redis.call('HSET', account, 'keys', keys .. ARGV[2])
return 1
