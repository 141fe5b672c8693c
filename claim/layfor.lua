-- layfor.lua v2: a staff save's change of one bucket's stock, in two steps:
-- 'hold' checks the bucket can take the change and holds it (claims,
-- transfers, releases and confirmations wait, as for a rebuild's freeze);
-- 'lay', after the configuration is stored, applies it as a delta.
-- KEYS[1] the bucket's stock, KEYS[2] its stats (hash: epoch = replication
-- id of the server its stock was laid or rebuilt on, cv = configuration
-- version laid, laid = units laid for it, granted), KEYS[3] its frozen
-- marker (a rebuild's freeze or a save's hold). All share the bucket's tag.
-- ARGV[1] 'hold' or 'lay', ARGV[2] the save's token ("save:<hex>@<ms>"),
-- ARGV[3] the hold's lifetime (ms), ARGV[4] units of the new version in
-- this bucket, ARGV[5] the new configuration version, ARGV[6] 1 when the
-- bucket is new to the sale (it may have no stock yet), ARGV[7] 1 when the
-- bucket count changes, ARGV[8] units of the stored version in this bucket
-- (the delta's base when the bucket has not recorded it: a rebuild rewrote
-- it), ARGV[9] the instant (unix ms, by Redis TIME) the change is locked
-- from (0: never).
-- Reply 1 held / laid, 0 a version as new is laid (a concurrent save),
-- -1 refused: the units sold (or moved) from this bucket exceed its new
-- share, or the bucket count changes after a grant; -6 (hold) refused: the
-- change is locked by now (ARGV[9]); -2 refused: the bucket's server is not the one its stock
-- was laid on, or lost it (see claim.lua's fence): rebuild first; -3 frozen
-- by a rebuild; -4 held by another save; -5 (lay) this save's hold is gone.
-- A lay never adopts the server's id for a bucket that has stock, and
-- never counts stock a server may have lost: both need a rebuild.
local stock, stats, frozen = KEYS[1], KEYS[2], KEYS[3]
local mode, token = ARGV[1], ARGV[2]
local held = redis.call('GET', frozen)
if mode == 'hold' then
  if held and held ~= token then
    if string.sub(held, 1, 5) == 'save:' then return -4 end
    return -3
  end
  local lock = tonumber(ARGV[9])
  if lock > 0 and now_ms() >= lock then
    return -6
  end
elseif held ~= token then
  return -5
end
local st = redis.call('HMGET', stats, 'epoch', 'cv', 'laid', 'granted')
local cur = tonumber(redis.call('GET', stock) or '0')
local base = tonumber(st[3] or ARGV[8])
if not st[1] then
  -- Never laid here: a new bucket, or a server that lost it.
  if ARGV[6] ~= '1' or redis.call('EXISTS', stock) == 1 then
    return -2
  end
  cur, base = 0, 0
elseif st[1] ~= replid() then
  return -2
end
local version = tonumber(ARGV[5])
if tonumber(st[2] or '-1') >= version then
  return 0
end
local units = tonumber(ARGV[4])
if ARGV[7] == '1' and tonumber(st[4] or '0') > 0 then
  return -1
end
local left = cur + units - base
if left < 0 then
  return -1
end
if mode == 'hold' then
  redis.call('SET', frozen, token, 'PX', ARGV[3])
  return 1
end
redis.call('SET', stock, left)
redis.call('HSET', stats, 'epoch', replid(), 'cv', version, 'laid', units)
return 1
