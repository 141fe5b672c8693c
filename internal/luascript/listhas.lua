-- listhas v1: a list's exact membership check (package door/lists owns the
-- layout), included after the prelude in every script that calls list_has.
-- A list's exact copy in a queue's slot is a hash: field = the first two
-- bytes (big-endian) of an entry's 8-byte keyed hash, value = the other
-- six bytes of every entry of that field, concatenated in ascending byte
-- order. list_has(key, h) is true when the 8-byte string h is an entry of
-- the copy at key: one HGET and a binary search.
local function list_n6(s, at)
  local a, b, c, d, e, f = string.byte(s, at, at + 5)
  return ((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f
end

local function list_has(key, h)
  local blob = redis.call('HGET', key, string.sub(h, 1, 2))
  if not blob then
    return false
  end
  -- Six bytes compare as a number (exact in a double): Redis's Lua
  -- compares strings by the server's collation, not by byte.
  local want = list_n6(h, 3)
  local lo, hi = 0, math.floor(#blob / 6) - 1
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local got = list_n6(blob, mid * 6 + 1)
    if got == want then
      return true
    elseif got < want then
      lo = mid + 1
    else
      hi = mid - 1
    end
  end
  return false
end
