-- seqfence v1: the failover fence of a sequence counter (internal/luascript):
-- included after the prelude in every script that calls seq_fence, so no
-- seq is given twice across a Redis failover. A promoted replica may have
-- lost the last INCRs of the old primary, whose people keep their
-- tickets. The fence, a hash beside the counter, records r, the
-- replication id the counter is kept on, and the counter's pace: s, the
-- last second (Redis TIME) in which a seq was given, s0 the counter at
-- its start, pk the most seqs given in one second. A call that finds
-- another r runs on a copy that may have lost writes: the counter moves
-- past max(counter, high) by ceil(max(pk, 1) * (span / 1000 + 1)), the
-- most seqs the recorded pace gives within the span the old primary may
-- have written alone (the replication lag limit, queue.FailoverSpan), and
-- the new r is recorded. A promoted replica whose fence r is not the id
-- it last followed (INFO's master_replid2) copied the fence from before
-- its primary took that id (as a primary does when its first replica
-- attaches), so the lost writes may hold the old primary's own move too:
-- it moves twice as far. The caller's high (the highest seq of this
-- counter it has seen) raises the counter at every call, so every ticket
-- a node has seen stays below the counter. A fence without r is a new
-- counter's (or an older version's): it records r, and moves the counter
-- as for a failover at the least pace (pk = 1) only on a promoted server
-- (INFO's second_repl_offset set), where the counter may have been born
-- in the lost writes.
--
-- seq_fence(counter, fence, high, span) reads the counter and its fence,
-- moves the counter as above and returns the fence's state and the
-- counter; the caller then INCRs the counter and ends with
-- seq_paced(state, counter after its INCRs, now_ms()). Both write, so a
-- script calls seq_fence after its reads.
local function seq_fence(counter, fence, high, span)
  local n = tonumber(redis.call('GET', counter) or '0')
  local fs = redis.call('HMGET', fence, 'r', 's', 's0', 'pk')
  local pk = tonumber(fs[4] or '0')
  -- The server's replication id, and whether it took over another
  -- primary's history (a promoted replica keeps it as second_repl_offset).
  local id, followed, promoted = '', '', false
  local ok, info = pcall(redis.call, 'INFO', 'replication')
  if ok and type(info) == 'string' then
    id = string.match(info, 'master_replid:(%w+)') or ''
    followed = string.match(info, 'master_replid2:(%w+)') or ''
    promoted = (tonumber(string.match(info, 'second_repl_offset:(%-?%d+)') or '-1') or -1) >= 0
  end
  local moved = math.max(n, high)
  if id ~= '' and fs[1] ~= id and (fs[1] or promoted) then
    local times = 1
    if promoted and fs[1] ~= followed then times = 2 end
    moved = moved + times * math.ceil(math.max(pk, 1) * (span / 1000 + 1))
  end
  local raised = moved > n
  if raised then
    n = moved
    redis.call('SET', counter, string.format('%.0f', n))
  end
  if id ~= '' and fs[1] ~= id then redis.call('HSET', fence, 'r', id) end
  local st = {fence = fence, n0 = n, raised = raised, pk = pk,
    s = tonumber(fs[2] or '-1'), s0 = tonumber(fs[3] or '0')}
  return st, n
end
-- seq_paced(st, n, now) records the pace once a call has moved the
-- counter from st.n0 to n: the seqs given in this second (Redis TIME).
local function seq_paced(st, n, now)
  if n <= st.n0 then return end
  local sec = math.floor(now / 1000)
  local s, s0 = st.s, st.s0
  if s ~= sec or st.raised or s0 > st.n0 then s, s0 = sec, st.n0 end
  redis.call('HSET', st.fence, 's', s, 's0', string.format('%.0f', s0), 'pk', math.max(st.pk, n - s0))
end
