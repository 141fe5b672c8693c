package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// ConnectJS connects to the NATS server at url, reconnecting without
// limit (a test may restart the server), and returns its JetStream; the
// connection is closed on cleanup.
func ConnectJS(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("testenv: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("testenv: jetstream.New: %v", err)
	}
	return js
}

// WaitSynced polls until replica's link to primary is up and both report
// the same replication offset, so a failover now loses nothing; it gives
// up after limit with both offsets.
func WaitSynced(ctx context.Context, primary, replica *redis.Client, limit time.Duration) error {
	return poll(limit, func() error {
		p := ReplicationField(ctx, primary, "master_repl_offset")
		r := ReplicationField(ctx, replica, "slave_repl_offset")
		if ReplicationField(ctx, replica, "master_link_status") == "up" && p != "" && p == r {
			return nil
		}
		return fmt.Errorf("replica not in sync: primary offset %s, replica %s", p, r)
	})
}

// ReplicationField reads one field of c's INFO replication; "" when it
// cannot.
func ReplicationField(ctx context.Context, c *redis.Client, field string) string {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return ""
	}
	return infoField(info, field)
}
