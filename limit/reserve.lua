-- reserve.lua v1: bind a device id or payment fingerprint to the first user
-- who claims with it in an event.
-- KEYS[1] the reservation: a string holding the user id.
-- ARGV[1] user id, ARGV[2] ttl (ms).
-- Reply 1 when the value is (now) held by this user, 0 when another user
-- holds it. The holder's own repeats pass and keep the first expiry.
local holder = KEYS[1]
local cur = redis.call('GET', holder)
if not cur then
  redis.call('SET', holder, ARGV[1], 'PX', ARGV[2])
  return 1
end
if cur == ARGV[1] then
  return 1
end
return 0
