-- join.lua v8: give each of n users one sequence number in an event's queue,
-- or in one join shard of a queue spread over S > 1 shards (see Order),
-- exactly as n calls for one user each, run one after another at one
-- instant, would (concurrent joins share a call: see joinBatcher).
-- KEYS[1] sequence counter, KEYS[2] frozen window size W, KEYS[3] the
-- seconds list of a join shard: one "second:first seq" entry per second
-- (since the queue opened) in which someone joined the shard after its
-- window froze, oldest first (named but unused when ARGV[4] is not 1);
-- KEYS[4] the counter's failover fence (a hash, below), KEYS[5..4+B] the
-- exact copies of B block lists, KEYS[5+B..4+B+E] those of E eligibility
-- lists (package door/lists' layout, read by list_has), KEYS[4+B+E+i] user
-- i's hash bucket (user -> packed entry).
-- All keys share one hash tag: the event's, the lane's or the join shard's.
-- ARGV[1] queue opens, ARGV[2] window end, ARGV[3] join end (unix ms),
-- ARGV[4] 1 for a join shard, ARGV[5] the Redis TIME (unix ms) until
-- which the caller's view of these instants may act (0: no bound; see
-- event.MaxViewAge), ARGV[6] the highest seq of this counter the caller
-- has seen (0: none), ARGV[7] the failover span (ms), ARGV[8] B, ARGV[9]
-- E, then per user: the user, and when B + E > 0 its 8-byte keyed hash
-- (door/lists.Arg). Every user of a call is checked against the same lists.
-- The lists: a user on one of the B block lists is refused (code 5), one
-- on none of the E eligibility lists (when E > 0) too (code 6), before
-- their entry is read: nothing is written for them and no seq is taken.
-- Packed entry: seq * 2^22 + seconds since the queue opened, so a repeated
-- join rebuilds the very same ticket from one small integer. The seconds
-- hold 2^22 - 1 (48.5 days): on one slot, where the position is seq, a
-- later join's second saturates there (only its ticket's iat is late); a
-- join shard, whose later joiners are ordered by their second, refuses a
-- join past it (code 3; event validation keeps a sharded queue's joining
-- within it: queue.MaxShardedSpan).
-- Reply: four entries per user, {code, seq, joined_s, W}: code 0 new,
-- 1 existing, 2 not open yet, 3 joining has ended, 4 the view is stale
-- (past ARGV[5]: nothing was read or written, the caller refreshes its view
-- of the sale), 5 blocked, 6 not eligible, -1 the user's bucket could not
-- be read (seq is Redis's error). W (a shard's W_s) is -1 while
-- the window is open.
-- The failover fence: no seq is given twice across a Redis failover.
-- KEYS[4] keeps the counter's fence (seq_fence, internal/luascript's
-- seqfence.lua): on a promoted replica the counter moves past
-- max(counter, ARGV[6]) by what its recorded pace gives in ARGV[7].
local counter, window, seconds, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sharded = ARGV[4] == '1'
local now = now_ms()
local opens, wend, jend = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local base = math.floor(opens / 1000)
local viewend = tonumber(ARGV[5])
local nblock, nelig = tonumber(ARGV[8]), tonumber(ARGV[9])
local stride = 1
if nblock + nelig > 0 then
  stride = 2
end
local first = 5 + nblock + nelig -- the first user's bucket in KEYS
if viewend > 0 and now >= viewend then
  -- A staff save may have moved these instants since the view was read:
  -- freeze nothing, place nobody (event.LockMargin keeps a fresh view clear).
  local out = {}
  for i = 10, #ARGV, stride do
    out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = 4, 0, 0, -1
  end
  return out
end

-- listed is 5 for a user whose hash h is on a block list, 6 for one on
-- none of the eligibility lists, false for one the lists let in.
local function listed(h)
  for k = 5, 4 + nblock do
    if list_has(KEYS[k], h) then
      return 5
    end
  end
  if nelig == 0 then
    return false
  end
  for k = 5 + nblock, 4 + nblock + nelig do
    if list_has(KEYS[k], h) then
      return false
    end
  end
  return 6
end

local fenced, n = seq_fence(counter, fence, tonumber(ARGV[6]), tonumber(ARGV[7]))

local w = redis.call('GET', window)
if not w and now >= wend then
  w = redis.call('GET', counter) or '0'
  redis.call('SET', window, w)
end
w = tonumber(w or '-1')

local rel = math.floor((now - opens) / 1000)
local lastrel -- the seconds list's last second, once read
local out = {}
local function reply(code, seq, joined)
  local k = #out
  out[k + 1], out[k + 2], out[k + 3], out[k + 4] = code, seq, joined, w
end

local u = 0
for i = 10, #ARGV, stride do
  local user, bucket = ARGV[i], KEYS[first + u]
  u = u + 1
  local refused = stride == 2 and listed(ARGV[i + 1])
  local packed = not refused and redis.pcall('HGET', bucket, user)
  if refused then
    reply(refused, 0, 0)
  elseif type(packed) == 'table' and packed.err then
    reply(-1, packed.err, 0)
  elseif packed then
    packed = tonumber(packed)
    local r = packed % 4194304
    reply(1, (packed - r) / 4194304, base + r)
  elseif now < opens then
    reply(2, 0, 0)
  elseif now >= jend or (sharded and rel > 4194303) then
    reply(3, 0, 0)
  else
    local seq = redis.call('INCR', counter)
    n = seq
    local r = math.min(rel, 4194303)
    if sharded and w >= 0 then
      -- A later joiner of a shard: the seconds list says where each
      -- second starts. Its seconds never go back, even if this server's
      -- clock does.
      if not lastrel then
        local last = redis.call('LINDEX', seconds, -1)
        lastrel = last and tonumber(string.match(last, '^(%d+):')) or -1
      end
      if r > lastrel then
        redis.call('RPUSH', seconds, string.format('%d:%.0f', r, seq))
        lastrel = r
      else
        r = lastrel
      end
    end
    redis.call('HSET', bucket, user, string.format('%.0f', seq * 4194304 + r))
    reply(0, seq, base + r)
  end
end
seq_paced(fenced, n, now)
return out
