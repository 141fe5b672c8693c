-- advance.lua v13: move an event's admission frontier forward. Leaderless: every
-- node may call it on every tick; Redis TIME and the stored last-advance
-- instant make the total advance rate * elapsed however many nodes call.
--
-- KEYS[1] frontier hash: b = admissions paid for by the rate, n = no-shows
--         credited (net of those counted back), c = positions checked for
--         no-shows, g = highest position admitted at least the grace ago,
--         t = last advance (unix ms; 0 before the start), a = admission clock (ms of time not
--         held since the start), f = frontier, h = last F pushed to the
--         history, p = positions ever present, r = the replication id
--         the count under max_active is kept on, rh = held until (unix
--         ms; see the failover fence below)
-- KEYS[2] queue sequence counter, KEYS[3] frozen window size W,
-- KEYS[4] presence bitmap (bit = position: an admission token was issued),
-- KEYS[5] history list of "admission clock ms:F" samples, oldest first,
-- KEYS[6] active set (zset position -> admission deadline, unix ms),
-- KEYS[7] report tally hash (tally.go: wait histograms), KEYS[8] claimed
-- bitmap (bit = position: granted a claim at least once), KEYS[9] finished
-- bitmap (bit = position: the shop reported the checkout session finished;
-- it never counts as active again), KEYS[10] shop health hash (held = 1
-- while the health check fails; see health.lua), KEYS[11] late requests
-- (zset position -> first request, unix ms), KEYS[12] readmitted late
-- no-shows (zset position -> deadline on the admission clock), KEYS[13]
-- held log (list: "q" when position q is credited as a no-show under
-- max_active, "-q" when it is counted back or readmitted), KEYS[14] the
-- queue counter's failover fence (join.lua's: seq_fence).
-- All keys share the event's hash tag.
-- ARGV[1] admission start = window end (unix ms), ARGV[2] rate per second,
-- ARGV[3] 1 when paused or sold out (nobody can be admitted: the admission
-- clock stands still), ARGV[4] no-show grace (ms), ARGV[5] most positions
-- checked per call, ARGV[6] units a lottery may still sell (on sale +
-- released; -1: not a lottery), ARGV[7] max_active (0: none), ARGV[8]
-- admission TTL (ms), ARGV[9] np, ARGV[10] nc, ARGV[11] joined and
-- ARGV[12] W for a queue of join shards (their keys are on other slots: the
-- node reads them and passes the people with a settled position and W, -1
-- while open), or -1 and -1: read KEYS[2] and freeze KEYS[3] here;
-- ARGV[13] the most time one call credits (ms), ARGV[14] 1 when the sale
-- follows the shop's health (KEYS[10] held then holds admission too, and
-- is reported held); ARGV[15] the Redis TIME (unix ms) until which the
-- caller's view of the sale may act (0: no bound; after it the call is
-- refused before any write, 'anteroom: stale view': a view a staff save
-- overtook never starts admission or freezes a window at a start the store
-- no longer has; see event.MaxViewAge), ARGV[16] nl, ARGV[17] the caller's
-- offset in the held log, ARGV[18] the highest seq of the queue counter
-- the caller has seen (0: none), ARGV[19] the failover span (ms); then nl
-- late requests (held no-shows asking to
-- come in), np positions present,
-- np waits (seconds from join to the token, -1 unknown), nc positions that
-- were granted a claim, nc waits (seconds from the admission token to the
-- grant, -1 unknown), and the rest: position, user of each pending claim. A
-- wait is tallied when its position is first marked (present, claimed), so
-- a retried call tallies it once.
--
-- Fixed rate means present people: a position admitted longer than the grace
-- ago (on the admission clock) whose bit is still 0 is a no-show, and the
-- frontier moves one further for it. A no-show that fetches its token later
-- is counted back (n - 1): the next admissions wait for it. The check is
-- bounded per call and walks each position once; F never passes the number
-- who joined, never moves back, and stands still while admission is held.
--
-- One call credits at most ARGV[13] ms (a few ticks): after a gap in which no
-- call ran (Redis unreachable or paused, every node stopped, or the first
-- call long after the window closed), the rate is not made up at one instant
-- — admissions never outrun the rate by the wall clock. The admission clock
-- moves by what was credited, so the no-show grace is measured on the same
-- time the rate was.
--
-- Caps count people: with max_active, F ≤ max_active + n + p − active, where
-- active = present people whose admission is unexpired and unused, or who
-- hold a pending claim (each user once); F − n − p are admitted and not yet present, so
-- they count as active too. In a lottery F ≤ n + units.
-- Finished positions (KEYS[9]) are neither made active again by a later
-- token nor counted for a pending claim.
--
-- Late no-shows are held under max_active: each credited no-show is
-- logged in KEYS[13], which every node tails (the reply carries the log
-- from the caller's offset), so status hands a held position no token and
-- sends a late request instead. Late requests are let in oldest first,
-- before F moves, only within the rate and the caps: the readmitted
-- position is counted back (n - 1) and is admitted again, with a new
-- grace; one who does not come within it is a no-show again.
-- The failover fence (with max_active; enter.lua keeps the same one): r
-- records the replication id (replid()) of the server the count of active
-- people is kept on. A call that finds another id runs on a promoted
-- replica, or on a server restored from an older copy, which may have
-- lost the last writes of the old one: admissions (a room's instant ones,
-- the frontier's), presence marks, deadlines in the active set. Their
-- tokens are valid and cannot be revoked, so the count here is short of
-- the people who hold them. Admission is held (as by ARGV[3]: the
-- admission clock stands still) until rh = now + TTL + grace, when every
-- such admission has expired; presence marks and claims are recorded
-- meanwhile. A hash without r (an older version's, or a new sale)
-- records the id without a hold. Without max_active nothing is capped and
-- the queue's own failover limit applies (see package queue).
-- The queue's fence (one slot: not for join shards, whose counters
-- readshard.lua fences): the counter KEYS[2] is fenced (seq_fence, as
-- join.lua does) before W is frozen from it or joined read, so a step that
-- runs first on a promoted replica freezes W past the joins the old
-- primary answered alone: their people keep their tickets and their places
-- in the window; the numbers skipped are no-shows.
-- Reply {F * 1000, joined, W (-1 while open), now (unix ms), n, active,
-- health held (0/1), health generation, c, held log length, the log's
-- epoch, then the log's entries from ARGV[17] (at most 4096; "-q" as -q)}.
-- The epoch names the server the log was read on (with max_active: the
-- first 52 bits of replid(), 0 without one): a promoted replica's log may
-- differ from the old primary's past what it copied, and grow back past a
-- node's offset before the node reads again, so a node whose copy was read
-- on another server reads the log again from its start.
local frontier, counter, window, presence, history = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local activeset, tallies, claimedbits, finishedbits, healthhash = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local latereqs, readmitted, heldlog, seqfence = KEYS[11], KEYS[12], KEYS[13], KEYS[14]
local now = now_ms()
local start, rate, hold = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local grace, maxcheck = tonumber(ARGV[4]), tonumber(ARGV[5])
local units, maxactive, ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local np, nc = tonumber(ARGV[9]), tonumber(ARGV[10])
local sharded = tonumber(ARGV[11]) >= 0
local maxstep = tonumber(ARGV[13])
local viewend = tonumber(ARGV[15])
if viewend > 0 and now >= viewend then return redis.error_reply('anteroom: stale view') end
local nl, logfrom = tonumber(ARGV[16]), tonumber(ARGV[17])
local at = 20 + nl -- the first position present

-- Every key is read before anything is written: a key of the wrong type
-- fails the script here, before a presence mark is set without its
-- accounting (a retry would then never count the position back). Redis
-- does not roll back a script that fails halfway.
local st = redis.call('HMGET', frontier, 'b', 'n', 'c', 't', 'f', 'h', 'g', 'a', 'p', 'r', 'rh')
local joined = tonumber(redis.call('GET', counter) or '0')
local w = redis.call('GET', window)
if sharded then
  joined, w = tonumber(ARGV[11]), ARGV[12]
  if tonumber(w) < 0 then w = nil end
end
redis.call('GETBIT', presence, 0)
redis.call('LLEN', history)
redis.call('ZCARD', activeset)
redis.call('HLEN', tallies)
redis.call('GETBIT', claimedbits, 0)
redis.call('GETBIT', finishedbits, 0)
local hs = redis.call('HMGET', healthhash, 'held', 'gen')
redis.call('ZCARD', latereqs)
redis.call('ZCARD', readmitted)
redis.call('LLEN', heldlog)
if not sharded then
  -- The counter's fence reads it (and the fence), then writes.
  local _, moved = seq_fence(counter, seqfence, tonumber(ARGV[18]), tonumber(ARGV[19]))
  joined = moved
end
local health = {'0', hs[2] or '0'}
if ARGV[14] == '1' and hs[1] == '1' then
  health[1] = '1'
  hold = true
end
local fence, id = tonumber(st[11] or '0'), st[10]
local epoch = 0
if maxactive > 0 then
  local cur = replid()
  epoch = tonumber(string.sub(cur, 1, 13), 16) or 0
  if cur ~= '' and id ~= cur then
    if id then fence = math.max(fence, now + ttl + grace) end
    id = cur
  end
  if now < fence then hold = true end
end
local b, n, c = tonumber(st[1] or '0'), tonumber(st[2] or '0'), tonumber(st[3] or '0')
local last = tonumber(st[4] or '0')
local f, h, bound = tonumber(st[5] or '0'), tonumber(st[6] or '-1'), tonumber(st[7] or '0')
-- A frontier written before the admission clock existed has wall-clock
-- history samples: its clock starts at the last advance, which they match.
-- Likewise its present count is the bitmap's, counted once.
local a, p = tonumber(st[8] or st[4] or '0'), tonumber(st[9] or '-1')
if p < 0 then p = redis.call('BITCOUNT', presence) end
-- The last advance is never before the start: a start moved later gives no
-- catch-up step counted from the old one. Before the start t is stored as
-- 0 (no advance yet), so a start moved earlier is not waited for; a t
-- ahead of now that nothing was credited from (a = 0) is the old start an
-- earlier version stored before the start, not an advance.
if a == 0 and last > now then last = 0 end
last = math.max(last, start)

-- tally adds a wait of s seconds to histogram pre (j: join to admission
-- token, c: admission token to claim): field pre:<bound> for the first
-- bound (seconds) it is within, pre:inf beyond; pre:n counts, pre:s sums.
local bounds = {1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
local function tally(pre, s)
  s = tonumber(s)
  if s < 0 then return end
  local f = pre .. ':inf'
  for _, b in ipairs(bounds) do
    if s <= b then f = pre .. ':' .. b break end
  end
  redis.call('HINCRBY', tallies, f, 1)
  redis.call('HINCRBY', tallies, pre .. ':n', 1)
  redis.call('HINCRBY', tallies, pre .. ':s', s)
end

for i = at, at + np - 1 do
  local pos = tonumber(ARGV[i])
  if redis.call('SETBIT', presence, pos, 1) == 0 then
    p = p + 1
    if pos <= c then
      -- Credited as a no-show: counted back, unless it was readmitted
      -- (counted back then).
      if redis.call('ZREM', readmitted, pos) == 0 then
        n = n - 1
        redis.call('RPUSH', heldlog, -pos)
      end
      redis.call('ZREM', latereqs, pos)
    end
    tally('j', ARGV[i + np])
  end
  if maxactive > 0 and redis.call('GETBIT', finishedbits, pos) == 0 then
    redis.call('ZADD', activeset, 'GT', now + ttl, pos)
  end
end
local cl = at + 2 * np
for i = cl, cl + nc - 1 do
  redis.call('ZREM', activeset, ARGV[i]) -- the admission is used
  if redis.call('SETBIT', claimedbits, tonumber(ARGV[i]), 1) == 0 then tally('c', ARGV[i + nc]) end
end

if not w and now >= start and not sharded then
  w = string.format('%.0f', joined)
  redis.call('SET', window, w)
end
w = tonumber(w or '-1')

if now >= start and now > last then
  if not hold then
    local dt = math.min(now - last, maxstep)
    a = a + dt
    b = b + rate * dt / 1000
  end
  last = now
  -- No-shows: positions admitted at least grace ago on the admission clock
  -- (the newest history sample older than the grace gives that bound) and
  -- never marked present.
  while true do
    local head = redis.call('LINDEX', history, 0)
    if not head then break end
    local sep = string.find(head, ':')
    if tonumber(string.sub(head, 1, sep - 1)) > a - grace then break end
    bound = math.max(bound, math.floor(tonumber(string.sub(head, sep + 1))))
    redis.call('LPOP', history)
  end
  if bound > c then
    local upto = math.min(bound, c + maxcheck)
    for q = c + 1, upto do
      if redis.call('GETBIT', presence, q) == 0 then
        n = n + 1
        if maxactive > 0 then redis.call('RPUSH', heldlog, q) end
      end
    end
    c = upto
  end
  -- Readmitted late no-shows who did not come within their new grace are
  -- no-shows again, and held.
  for _, q in ipairs(redis.call('ZRANGEBYSCORE', readmitted, '-inf', a)) do
    redis.call('ZREM', readmitted, q)
    if redis.call('GETBIT', presence, q) == 0 then
      n = n + 1
      redis.call('RPUSH', heldlog, q)
    end
  end
end
-- A late request counts for a position still held: a credited no-show,
-- never present, not readmitted.
if maxactive > 0 then
  for i = 20, 19 + nl do
    local q = tonumber(ARGV[i])
    if q <= c and redis.call('GETBIT', presence, q) == 0 and not redis.call('ZSCORE', readmitted, q) then
      redis.call('ZADD', latereqs, 'NX', now, q)
    elseif q <= c and redis.call('GETBIT', presence, q) == 1 then
      redis.call('RPUSH', heldlog, -q) -- the caller's log was behind the truth
    end
  end
end

-- The active set is kept only while max_active is set (so it stays about
-- max_active long); a max_active set mid-sale counts tokens issued from then.
redis.call('ZREMRANGEBYSCORE', activeset, '-inf', now)
local active = 0
if maxactive > 0 then
  active = redis.call('ZCARD', activeset)
  -- Pending claims count people, by user: one person however many claims
  -- they hold, and every bypass pass holder (all at 2^50) is their own.
  -- A holder whose queue position is active already (counted above) or
  -- finished is not counted again. Another lane's member or a pass
  -- (lane * 2^40 + n, 2^50) is never in this queue's sets.
  local seen = {}
  for i = cl + 2 * nc, #ARGV - 1, 2 do
    if tonumber(ARGV[i]) < 4294967296 and (redis.call('ZSCORE', activeset, ARGV[i])
        or redis.call('GETBIT', finishedbits, ARGV[i]) == 1) then
      seen[ARGV[i + 1]] = true
    end
  end
  for i = cl + 2 * nc, #ARGV - 1, 2 do
    if not seen[ARGV[i + 1]] then
      seen[ARGV[i + 1]] = true
      active = active + 1
    end
  end
end

if now >= start and maxactive > 0 and not hold then
  -- Held late no-shows first, oldest request first, within the caps. Each
  -- is an admission the rate pays for: counted back (n - 1), F waits until
  -- b has paid for it, and no other is let in while that is owed.
  local room = maxactive + n + p - active - f
  if units >= 0 then room = math.min(room, n + units - f) end
  while room >= 1 and b + n - f > 0 do
    local head = redis.call('ZRANGE', latereqs, 0, 0)[1]
    if not head then break end
    redis.call('ZREM', latereqs, head)
    if redis.call('GETBIT', presence, head) == 0 and not redis.call('ZSCORE', readmitted, head) then
      n = n - 1
      room = room - 1
      redis.call('ZADD', readmitted, a + grace, head)
      redis.call('RPUSH', heldlog, -tonumber(head))
    end
  end
end
if now >= start then
  local next = math.min(b + n, joined)
  if units >= 0 then next = math.min(next, n + units) end
  if maxactive > 0 then next = math.min(next, maxactive + n + p - active) end
  if next > f then f = next end
  -- No banked credit: what the caps or the queue held back is not owed.
  if b + n > f then b = math.max(f - n, 0) end
  if math.floor(f) > h then
    redis.call('RPUSH', history, a .. ':' .. math.floor(f))
    h = math.floor(f)
  end
end
if now < start then last = 0 end
redis.call('HSET', frontier, 'b', string.format('%.6f', b), 'n', n, 'c', c, 't', last,
  'f', string.format('%.6f', f), 'h', h, 'g', bound, 'a', a, 'p', p)
if id then redis.call('HSET', frontier, 'r', id, 'rh', fence) end
local reply = {math.floor(f * 1000), joined, w, now, n, active, tonumber(health[1]), tonumber(health[2]), c, redis.call('LLEN', heldlog), epoch}
for _, e in ipairs(redis.call('LRANGE', heldlog, logfrom, logfrom + 4095)) do
  table.insert(reply, tonumber(e))
end
return reply
