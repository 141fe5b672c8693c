package limit

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ClientFor returns a Redis client for a Limiter: the same server (or
// cluster) and credentials as rdb, with a connection pool of its own, so
// that limiter calls never queue behind slow claims, and three changes. It
// honours context deadlines (go-redis ignores them by default and waits for
// its read timeout), so a stalled Redis holds a decision for
// Config.Timeout only; it does not retry commands; and it dials once, so a
// Redis that is down is noticed at once. Close it when done.
func ClientFor(rdb redis.UniversalClient) (redis.UniversalClient, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		return redis.NewClient(&redis.Options{
			Network: o.Network, Addr: o.Addr, Dialer: o.Dialer, Protocol: o.Protocol,
			Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider,
			DB: o.DB, TLSConfig: o.TLSConfig, PoolSize: o.PoolSize,
			ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		}), nil
	case *redis.ClusterClient:
		o := c.Options()
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: o.Addrs, Dialer: o.Dialer, Protocol: o.Protocol,
			Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider,
			TLSConfig: o.TLSConfig, PoolSize: o.PoolSize,
			ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		}), nil
	}
	return nil, fmt.Errorf("limit: unsupported Redis client %T", rdb)
}
