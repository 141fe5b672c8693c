-- audit_capped.lua v1: append one audit entry unless its class has had
-- its fill in the current window: entries an outsider can cause (failed
-- sign-ins) cannot flood the trail. The first one over the cap appends a
-- notice instead.
-- KEYS[1] the audit stream, KEYS[2] the class's counter
-- ARGV[1] window (ms), ARGV[2] entries per window, ARGV[3] the stream's
-- approximate length cap, ARGV[4] the notice's action, ARGV[5] the
-- notice's after (JSON), then the entry's field/value pairs.
-- Reply 1 appended, 0 over the cap.
local stream, counter = KEYS[1], KEYS[2]
local n = redis.call('INCR', counter)
if n == 1 or redis.call('PTTL', counter) < 0 then
  redis.call('PEXPIRE', counter, ARGV[1])
end
local cap = tonumber(ARGV[2])
if n <= cap then
  redis.call('XADD', stream, 'MAXLEN', '~', ARGV[3], '*', unpack(ARGV, 6))
  return 1
end
if n == cap + 1 then
  redis.call('XADD', stream, 'MAXLEN', '~', ARGV[3], '*', 'who', 'anteroom', 'role', '',
    'action', ARGV[4], 'event', '', 'before', '', 'after', ARGV[5])
end
return 0
