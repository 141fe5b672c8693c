-- audit_once.lua v1: append one audit entry unless its marker is set, and
-- set it: one entry for a fact that every node observes.
-- KEYS[1] the audit stream, KEYS[2] the marker.
-- ARGV[1] marker lifetime (ms), ARGV[2] the stream's approximate length
-- cap, then the entry's field/value pairs.
-- Reply 1 appended, 0 the marker was set.
local stream, marker = KEYS[1], KEYS[2]
if not redis.call('SET', marker, '1', 'NX', 'PX', ARGV[1]) then return 0 end
redis.call('XADD', stream, 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 3))
return 1
