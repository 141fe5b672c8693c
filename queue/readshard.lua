-- readshard.lua v4: one node's read of one join shard, on every tick. It
-- freezes the shard's window at the window's end, like a join would, so a
-- shard nobody joins still freezes.
-- KEYS[1] shard sequence counter, KEYS[2] shard window size W_s, KEYS[3]
-- seconds list (see join.lua), KEYS[4] the counter's failover fence
-- (join.lua's).
-- ARGV[1] window end (unix ms), ARGV[2] first list index to return,
-- ARGV[3] the Redis TIME (unix ms) until which the caller's view of the
-- window end may act (0: no bound; after it the read is refused,
-- 'anteroom: stale view', before it freezes anything: see
-- event.MaxViewAge), ARGV[4] the highest seq of this counter the caller
-- has seen (0: none), ARGV[5] the failover span (ms).
-- Reply {now (unix ms), joined, W_s (-1 while open), then second, first seq
-- of each list entry from ARGV[2] on}. Read in one step, so every join of a
-- second before now's is counted in joined and listed.
-- The failover fence: the counter is fenced (seq_fence, as join.lua does)
-- before W_s is frozen from it, so a read that runs first on a promoted
-- replica freezes W_s past the joins the old primary answered alone: their
-- people keep their tickets and their places in the window. The numbers
-- the fence skips are nobody's (no-shows).
local counter, window, seconds, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = now_ms()
local viewend = tonumber(ARGV[3] or '0')
if viewend > 0 and now >= viewend then return redis.error_reply('anteroom: stale view') end
local w = redis.call('GET', window)
local list = redis.call('LRANGE', seconds, tonumber(ARGV[2]), -1)
local _, n = seq_fence(counter, fence, tonumber(ARGV[4] or '0'), tonumber(ARGV[5] or '0'))
if not w and now >= tonumber(ARGV[1]) then
  w = string.format('%.0f', n)
  redis.call('SET', window, w)
end
local out = {now, n, tonumber(w or '-1')}
for _, e in ipairs(list) do
  local sep = string.find(e, ':')
  out[#out + 1] = tonumber(string.sub(e, 1, sep - 1))
  out[#out + 1] = tonumber(string.sub(e, sep + 1))
end
return out
