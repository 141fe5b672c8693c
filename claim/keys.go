package claim

import (
	"hash/fnv"
	"strconv"
)

// bucketKeys are the keys of one stock bucket; they share one hash tag.
type bucketKeys struct {
	tag string
}

func bucketOf(ev string, b int) bucketKeys {
	return bucketKeys{tag: "ar:{" + ev + "#" + strconv.Itoa(b) + "}:"}
}

func (k bucketKeys) stock() string                 { return k.tag + "stock" }
func (k bucketKeys) userClaims(user string) string { return k.tag + "uc:" + user }
func (k bucketKeys) idem(user, key string) string {
	return k.tag + "idem:" + strconv.Itoa(len(user)) + ":" + user + ":" + key
}
func (k bucketKeys) records() string { return k.tag + "claims" }
func (k bucketKeys) outbox() string  { return k.tag + "outbox" }
func (k bucketKeys) stats() string   { return k.tag + "stats" }

// HomeBucket returns the bucket that holds user's stock and claim state.
func HomeBucket(user string, buckets int) int {
	if buckets <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(user))
	return int(h.Sum32() % uint32(buckets))
}
