package claim

import (
	"hash/fnv"
	"strconv"
)

// bucketKeys are the keys of one stock bucket; they share one hash tag, so
// every script on one bucket runs on one Redis Cluster shard.
type bucketKeys struct {
	tag string
}

func bucketOf(ev string, b int) bucketKeys {
	return bucketKeys{tag: "ar:{" + ev + "#" + strconv.Itoa(b) + "}:"}
}

// Stock and bookkeeping.
func (k bucketKeys) stock() string   { return k.tag + "stock" }
func (k bucketKeys) records() string { return k.tag + "claims" }
func (k bucketKeys) outbox() string  { return k.tag + "outbox" }
func (k bucketKeys) stats() string   { return k.tag + "stats" }
func (k bucketKeys) expiry() string  { return k.tag + "exp" }
func (k bucketKeys) frozen() string  { return k.tag + "frozen" }

// stockKeys are the keys claim.lua, release.lua and restore.lua take
// first, in this order, with room for n more.
func (k bucketKeys) stockKeys(n int) []string {
	return append(make([]string, 0, 6+n), k.stock(), k.records(), k.outbox(), k.stats(), k.expiry(), k.frozen())
}

// Per user: held claims (the limit counts them), every claim ever held (for
// listing), and idempotency keys.
func (k bucketKeys) userClaims(user string) string  { return k.tag + "uc:" + user }
func (k bucketKeys) userHistory(user string) string { return k.tag + "ua:" + user }
func (k bucketKeys) idem(user, key string) string {
	return k.tag + "idem:" + strconv.Itoa(len(user)) + ":" + user + ":" + key
}

// Stock transfers: records of units sent out and not yet settled, the
// units they hold, transfer ids credited here, and the generation a
// rebuild starts.
func (k bucketKeys) transfers() string { return k.tag + "xfer" }
func (k bucketKeys) parked() string    { return k.tag + "parked" }
func (k bucketKeys) applied() string   { return k.tag + "xin" }
func (k bucketKeys) gen() string       { return k.tag + "gen" }

// HomeBucket returns the bucket that holds user's claim state (held claims,
// idempotency keys, records) and from which their claims are served.
func HomeBucket(user string, buckets int) int {
	if buckets <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(user))
	return int(h.Sum32() % uint32(buckets))
}
