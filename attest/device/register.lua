-- register.lua v1: store an App Attest key whose attestation verified,
-- spending the challenge it was made for.
-- KEYS[1] the challenge's spent marker, KEYS[2] the key (a hash: pub, n).
-- ARGV[1] the public key (65 bytes), ARGV[2] when the key expires (unix
-- ms), ARGV[3] how long the marker outlives the challenge's validity (ms).
-- Reply: 1 stored, 2 already stored (its counter kept: an earlier
-- registration of the same key; the challenge is spent), 0 the challenge
-- was spent before (nothing written). Both KEYS share the sale's {ev#att}
-- tag.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], 1, 'PX', ARGV[3])
if redis.call('HSETNX', KEYS[2], 'pub', ARGV[1]) == 0 then
  return 2
end
redis.call('HSET', KEYS[2], 'n', 0)
redis.call('PEXPIREAT', KEYS[2], ARGV[2])
return 1
