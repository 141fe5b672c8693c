package lists

import (
	"encoding/binary"
	"testing"

	"github.com/anteroom/anteroom/queue"
)

// TestSipHashVector: the reference vector of the SipHash paper (key
// 00..0f, message 00..0e).
func TestSipHashVector(t *testing.T) {
	var key [16]byte
	for i := range key {
		key[i] = byte(i)
	}
	msg := make([]byte, 15)
	for i := range msg {
		msg[i] = byte(i)
	}
	k0, k1 := binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])
	if got, want := sipHash(k0, k1, string(msg)), uint64(0xa129ca6149be45e5); got != want {
		t.Fatalf("sipHash = %#x, want %#x", got, want)
	}
	// The empty message, from the reference implementation's vectors.
	if got, want := sipHash(k0, k1, ""), uint64(0x726fdb47dd0e0e31); got != want {
		t.Fatalf("sipHash(empty) = %#x, want %#x", got, want)
	}
}

// TestFNVIsQueueShard: an entry's FNV picks the join shard queue picks.
func TestFNVIsQueueShard(t *testing.T) {
	for _, u := range []string{"", "a", "user-1", "ünï", "0123456789abcdef0123456789"} {
		for _, s := range []int{2, 3, 16, 255} {
			if got, want := int(queue.UserHash(u)%uint32(s)), queue.ShardOf(u, s); got != want {
				t.Errorf("queue.UserHash(%q) %% %d = %d, want queue.ShardOf = %d", u, s, got, want)
			}
		}
	}
}
