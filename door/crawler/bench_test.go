package crawler

import (
	"net/netip"
	"testing"
	"time"
)

// BenchmarkVerifiedHit is the request path: an address whose answer is
// cached, read from every core at once.
func BenchmarkVerifiedHit(b *testing.B) {
	v := New(Config{})
	defer v.Close()
	addrs := make([]netip.Addr, 1024)
	until := v.now() + int64(time.Hour)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{66, 249, byte(i >> 8), byte(i)})
		s := v.cache.shard(addrs[i])
		s.mu.Lock()
		s.putLocked(addrs[i], answer{verified: i%2 == 0, until: until})
		s.mu.Unlock()
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			v.Verified(addrs[i&1023])
			i++
		}
	})
}
