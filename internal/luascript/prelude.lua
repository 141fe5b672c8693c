-- prelude v1: the helpers every anteroom script starts with (internal/luascript).
-- now_ms() is Redis TIME in unix milliseconds: the one clock scripts read.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- replid() is the replication id (master_replid) of the server running the
-- script. A promoted replica gets a new one, so a bucket that recorded the id
-- its stock was laid on can tell it now runs on a copy that may have missed
-- writes (see package claim). An embedded server without INFO has no
-- replicas and no id: ''.
local function replid()
  local ok, info = pcall(redis.call, 'INFO', 'replication')
  if not ok or type(info) ~= 'string' then return '' end
  return string.match(info, 'master_replid:(%w+)') or ''
end
