// Package redisrepl confirms that writes reached the Redis replicas.
// Redis replicates asynchronously: a write its primary answered is lost
// by a failover until the primary's replicas copied it. WAIT confirms
// the writes of the connection it runs on only, while a change of many
// keys is written through pooled connections and, on a Redis Cluster,
// to several masters. Wait confirms all of them at once: on every
// master, one connection writes a marker and WAITs for it, and since a
// master's replication stream is one ordered log, a replica that acked
// the marker holds everything the master took before it.
package redisrepl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// markerPrefix starts the key a master's marker is written to (with a
// hash tag of a slot the master serves on a Redis Cluster). It expires
// by itself and is read by nobody.
const markerPrefix = "ar:repl:mark"

// markerTTL is how long a marker stays: it only has to exist while its
// write is copied.
const markerTTL = time.Minute

// Shortfall is Wait's error when a master's replicas did not all
// acknowledge the writes in time: they stand on the master, and a
// failover now would lose them.
type Shortfall struct {
	// Master is the master's address.
	Master string
	// Acked is how many of its Replicas acknowledged within Within.
	Acked, Replicas int
	// Within is how long Wait waited.
	Within time.Duration
}

func (s *Shortfall) Error() string {
	return fmt.Sprintf("%d of the %d replicas of %s acknowledged the writes within %s", s.Acked, s.Replicas, s.Master, s.Within)
}

// Wait waits, up to within, until every replica each master of rdb (a
// *redis.Client, or every master of a *redis.ClusterClient) lists online
// acknowledged everything the master held when Wait was called, and
// returns a *Shortfall when one did not. Call it once the writes to
// confirm were answered. A master without replicas, a server without
// ROLE (miniredis) and a replica lagging so far its master dropped it
// (min-replicas-to-write refuses writes then) are not waited for.
func Wait(ctx context.Context, rdb redis.UniversalClient, within time.Duration) error {
	switch c := rdb.(type) {
	case *redis.Client:
		return waitMaster(ctx, c, func(context.Context, *redis.Client) (string, error) { return markerPrefix, nil }, within)
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return waitMaster(ctx, m, clusterMarker, within)
		})
	}
	return fmt.Errorf("redisrepl: a %T cannot wait for replicas", rdb)
}

// waitMaster waits for the replicas of the single master m, writing the
// marker at the key marker names (asked only when m has replicas).
func waitMaster(ctx context.Context, m *redis.Client, marker func(context.Context, *redis.Client) (string, error), within time.Duration) error {
	addr := m.Options().Addr
	// One connection for the marker and the WAIT: WAIT counts the
	// writes of its own connection.
	conn := m.Conn()
	defer conn.Close()
	role, err := conn.Do(ctx, "ROLE").Slice()
	if err != nil {
		if strings.HasPrefix(err.Error(), "ERR unknown command") {
			return nil
		}
		return fmt.Errorf("redisrepl: role of %s: %w", addr, err)
	}
	if len(role) < 3 || role[0] != "master" {
		return nil
	}
	replicas, _ := role[2].([]any)
	if len(replicas) == 0 {
		return nil
	}
	key, err := marker(ctx, m)
	if err != nil {
		return err
	}
	if err := conn.Set(ctx, key, "", markerTTL).Err(); err != nil {
		if strings.HasPrefix(err.Error(), "NOREPLICAS") {
			// Replicas dropped since the change was written, and
			// min-replicas-to-write refuses writes now: the change
			// stands on the master, copied by too few.
			return &Shortfall{Master: addr, Replicas: len(replicas), Within: within}
		}
		return fmt.Errorf("redisrepl: marker on %s: %w", addr, err)
	}
	acked, err := conn.Wait(ctx, len(replicas), within).Result()
	if err != nil {
		return fmt.Errorf("redisrepl: wait on %s: %w", addr, err)
	}
	if acked < int64(len(replicas)) {
		return &Shortfall{Master: addr, Acked: int(acked), Replicas: len(replicas), Within: within}
	}
	return nil
}
