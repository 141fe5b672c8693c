package testenv

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// StartMiniredis starts the embedded Redis a node runs when no Redis is
// configured (miniredis, see internal/node) on a free loopback port, and
// returns a client for it; both end with the test.
func StartMiniredis(t testing.TB) *redis.Client {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// EachRedis runs f as a subtest on each single Redis server anteroom
// supports: redis-server ("redis-server") and the embedded default
// ("miniredis"). A script's behaviour must not depend on which one runs
// it.
func EachRedis(t *testing.T, f func(t *testing.T, rdb *redis.Client)) {
	t.Helper()
	t.Run("redis-server", func(t *testing.T) { f(t, StartRedis(t).Client(t)) })
	t.Run("miniredis", func(t *testing.T) { f(t, StartMiniredis(t)) })
}
