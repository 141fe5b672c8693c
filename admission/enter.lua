-- enter.lua v5: a safety-net room's join, and its gate's admit-at-once. One
-- step: admit at once while nobody waits, fewer than max_active people are
-- active and the rate allows; otherwise queue first come first served (or,
-- for the gate, refuse: it keeps no queue entry). The door's exact list
-- checks ride it (as join.lua's): a caller on a block list, or on none of
-- the eligibility lists, is refused before anything is read or written.
--
-- KEYS[1] frontier hash (advance.lua's: f, n, p, c are read; f and p
-- written; r and rh, the failover fence, read and written),
-- KEYS[2] queue sequence counter, KEYS[3] frozen window size W,
-- KEYS[4] presence bitmap, KEYS[5] active set (position -> admission
-- deadline, unix ms), KEYS[6] the user's entry hash shard (join.lua's
-- packing), KEYS[7] instant-admission bucket hash: k = credit, kt = last
-- call (unix ms), kf = admitted people (F - no-shows) at the last call,
-- KEYS[8] the counter's failover fence (join.lua's: seq_fence),
-- KEYS[9..8+B] the exact copies of B block lists, KEYS[9+B..8+B+E] those
-- of E eligibility lists (package door/lists' layout, read by list_has).
-- All keys share the event's hash tag.
-- ARGV[1] user ('' for the gate: no entry is read or kept), ARGV[2] room
-- opens = starts_at (unix ms), ARGV[3] ends_at (unix ms), ARGV[4] rate per
-- second, ARGV[5] max_active, ARGV[6] admission TTL (ms), ARGV[7] 1 when
-- paused (nobody is admitted at once), ARGV[8] 1 to admit only (the gate),
-- ARGV[9] the no-show grace (ms; missing: 0), ARGV[10] the highest seq
-- of this counter the caller has seen (0: none), ARGV[11] the failover
-- span (ms), ARGV[12] B and ARGV[13] E (missing: 0), ARGV[14] the
-- caller's 8-byte keyed hash (door/lists.Arg) when B + E > 0.
--
-- Active = admitted and not yet present (F - n - p, within their grace) +
-- present with an unexpired admission (the active set), as advance.lua
-- counts them. The rate is shared with advance.lua: the credit refills at
-- the rate up to one second's worth (at least 1) and pays for the tick's
-- admissions too (F - n moved since the last call), and advance.lua's own
-- rate budget b is not paid by an instant admission, so the tick admits
-- again only once the rate has paid for the instant ones.
--
-- Reply {code, seq, joined (unix s), active}: code 0 admitted now (a new
-- seq), 1 queued (a new seq), 2 not open yet, 3 ended, 4 an entry still
-- waiting, 5 an entry admitted and active (or admitted and not yet
-- present, within the grace), 6 not admitted (admit only), 7 blocked and
-- 8 not eligible (by the lists: nothing read or written, {code, 0, 0,
-- 0}), before an entry is looked at: a listed user with an entry gets
-- no admission from it either. A user whose
-- earlier admission expired, or who was a no-show (admitted, never
-- present, and checked by advance.lua after the grace: position ≤ c),
-- gets a new entry: leaving ends the turn.
--
-- The failover fence (as advance.lua's): the frontier hash records in r
-- the replication id of the server the room's count is kept on. A script
-- that finds another id runs on a promoted replica (or a server restored
-- from an older copy), which may have lost admissions whose tokens are
-- still valid: the room is held (as paused: nobody is admitted at once)
-- until rh = now + TTL + grace, when every admission the lost writes
-- counted has expired. A hash without r (an older version's, or a new
-- room) records the id without a hold. The counter keeps the queue's own
-- fence (seq_fence, internal/luascript's seqfence.lua): on a promoted
-- replica it moves past max(counter, ARGV[10]) by what its recorded pace
-- gives in ARGV[11], so no position is given twice; the positions it
-- skips are nobody's, or lost entrances' (the tick admits them, and they
-- are no-shows unless their people come).
local frontier, counter, window, presence, activeset, users, instant = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local seqfence = KEYS[8]
local now = now_ms()
local user, opens, ends = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local rate, maxactive, ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local held, only = ARGV[7] == '1', ARGV[8] == '1'
local grace = tonumber(ARGV[9] or '0')
if now < opens then return {2, 0, 0, 0} end
if now >= ends then return {3, 0, 0, 0} end

-- The lists: only reads (HGET), before any other key is read.
local nblock, nelig = tonumber(ARGV[12] or '0'), tonumber(ARGV[13] or '0')
if nblock + nelig > 0 then
  local h = ARGV[14]
  for k = 9, 8 + nblock do
    if list_has(KEYS[k], h) then return {7, 0, 0, 0} end
  end
  if nelig > 0 then
    local on = false
    for k = 9 + nblock, 8 + nblock + nelig do
      if list_has(KEYS[k], h) then
        on = true
        break
      end
    end
    if not on then return {8, 0, 0, 0} end
  end
end

-- Read every key before writing (a key of the wrong type fails here).
local st = redis.call('HMGET', frontier, 'f', 'n', 'p', 'c', 'r', 'rh')
local joined = tonumber(redis.call('GET', counter) or '0')
local w = redis.call('GET', window)
redis.call('GETBIT', presence, 0)
local active = redis.call('ZCOUNT', activeset, '(' .. now, '+inf')
local packed = false
if user ~= '' then packed = redis.call('HGET', users, user) end
local bk = redis.call('HMGET', instant, 'k', 'kt', 'kf')
-- The counter's fence reads it (and the fence), then writes.
local fenced, counted = seq_fence(counter, seqfence, tonumber(ARGV[10] or '0'), tonumber(ARGV[11] or '0'))
local f, n = tonumber(st[1] or '0'), tonumber(st[2] or '0')
local p, checked = tonumber(st[3] or '-1'), tonumber(st[4] or '0')
if p < 0 then p = redis.call('BITCOUNT', presence) end
local admitted = math.floor(f)
local id, fence = replid(), tonumber(st[6] or '0')
if id ~= '' and st[5] ~= id then
  if st[5] then fence = math.max(fence, now + ttl + grace) end
  redis.call('HSET', frontier, 'r', id, 'rh', fence)
end
if now < fence then held = true end

-- Nobody joins before opens, so W freezes at what joined by then (0):
-- every position is its sequence number. (The counter as read, before
-- the fence moved it.)
if not w then redis.call('SET', window, tostring(joined)) end
joined = counted

local function stamp(seq)
  local rel = math.min(math.floor((now - opens) / 1000), 4194303)
  return rel, string.format('%.0f', seq * 4194304 + rel)
end

if packed then
  packed = tonumber(packed)
  local rel = packed % 4194304
  local seq = (packed - rel) / 4194304
  local joinedAt = math.floor(opens / 1000) + rel
  if seq > admitted then return {4, seq, joinedAt, active} end
  local dl = redis.call('ZSCORE', activeset, seq)
  if (dl and tonumber(dl) > now) or (seq > checked and redis.call('GETBIT', presence, seq) == 0) then
    return {5, seq, joinedAt, active}
  end
end

local burst = math.max(rate, 1)
local k, kt, kf = tonumber(bk[1] or burst), tonumber(bk[2] or now), tonumber(bk[3] or (f - n))
-- The tick's admissions since the last call were paid within the same
-- interval as the refill, so they are taken before the cap (a long quiet
-- interval does not leave a debt).
k = math.min(burst, k + rate * math.max(now - kt, 0) / 1000 - math.max(f - n - kf, 0))
local pending = math.max(admitted - n - p, 0)
local code = 1
if admitted >= joined and not held and pending + active < maxactive and k >= 1 then
  code = 0
elseif only then
  redis.call('HSET', instant, 'k', string.format('%.6f', k), 'kt', now, 'kf', string.format('%.6f', f - n))
  return {6, 0, 0, active}
end
local seq = redis.call('INCR', counter)
seq_paced(fenced, seq, now)
local rel, entry = stamp(seq)
if user ~= '' then redis.call('HSET', users, user, entry) end
if code == 0 then
  k = k - 1
  f = seq
  if redis.call('SETBIT', presence, seq, 1) == 0 then p = p + 1 end
  redis.call('ZADD', activeset, 'GT', now + ttl, seq)
  active = active + 1
  redis.call('HSET', frontier, 'f', string.format('%.6f', f), 'p', p)
end
redis.call('HSET', instant, 'k', string.format('%.6f', k), 'kt', now, 'kf', string.format('%.6f', f - n))
return {code, seq, math.floor(opens / 1000) + rel, active}
