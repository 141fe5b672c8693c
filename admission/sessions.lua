-- sessions.lua v1: remember which position each issued admission token (by
-- its jti) belongs to, so the shop can report the checkout finished.
-- KEYS: one "jti -> position" key per token, all with the event's hash tag.
-- ARGV[1] lifetime (ms), then one position per key.
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', ARGV[1])
end
return #KEYS
