package admission_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
)

// visitors records which user holds each position of a room.
type visitors map[int64]string

func (v visitors) enter(t *testing.T, f *admission.Frontier, ev, user string, e admission.Entrance) {
	t.Helper()
	e.User = user
	en := enter(t, f, ev, e)
	if u, ok := v[en.Seq]; ok && u != user {
		t.Fatalf("%s was given position %d, the position of %s", user, en.Seq, u)
	}
	v[en.Seq] = user
}

// TestRoomEntrancesAfterLaggingFailover: entrances to a safety-net room
// that the old primary answered while its replica had stopped copying are
// lost with it, and their visitors keep their positions (admitted ones
// their tokens). Entrances on the promoted replica must not be given those
// positions: not from a node that never saw them ("jump": the counter
// moves past what the recorded pace could have given while the primary
// wrote alone), nor when more were lost than the pace covers, from the
// node that gave them ("reported": it reports the highest position it
// gave with its next entrance), nor when the old primary itself moved the
// counter past its fence after the replica's last copy ("attached late":
// the primary took a new replication id when the replica attached).
//
// It failed before enter.lua fenced the room's counter (v3): "v0 was given
// position 4, the position of u3".
func TestRoomEntrancesAfterLaggingFailover(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before, lag int  // entrances before the replica stops copying, and after
		late        bool // the replica attaches after the first entrances
	}{
		{"jump", 3, 7, false},
		{"reported", 1, 60, false},
		{"attached late", 3, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const ev = "roomlag"
			primary := testenv.StartRedis(t)
			var replica *testenv.Redis
			if !tc.late {
				replica = testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
			}
			// Node a follows the failover: it dials the primary until the
			// promotion and the promoted replica after it.
			var addr atomic.Value
			addr.Store(primary.Addr())
			follow := redis.NewClient(&redis.Options{
				Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, network, addr.Load().(string))
				},
				MaxRetries: 5,
			})
			t.Cleanup(func() { _ = follow.Close() })
			a := admission.NewFrontier(follow)
			e := room("", 1000, 2, time.Minute) // two admitted at once, the rest queued
			v := visitors{}
			for i := range tc.before {
				v.enter(t, a, ev, fmt.Sprint("u", i), e)
			}
			if tc.late {
				// The primary takes a new replication id as its first replica
				// attaches: its next entrance moves the counter past the
				// fence, a move the replica below never copies.
				replica = testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
			}
			if err := testenv.WaitSynced(ctx, primary.Client(t), replica.Client(t), 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := replica.Client(t).Do(ctx, "CLIENT", "PAUSE", 300000, "WRITE").Err(); err != nil {
				t.Fatal(err)
			}
			for i := tc.before; i < tc.before+tc.lag; i++ { // answered by the primary alone
				v.enter(t, a, ev, fmt.Sprint("u", i), e)
			}
			primary.Kill(t)
			for _, cmd := range [][]any{{"REPLICAOF", "NO", "ONE"}, {"CLIENT", "UNPAUSE"}} {
				if err := replica.Client(t).Do(ctx, cmd...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			addr.Store(replica.Addr())
			b := admission.NewFrontier(replica.Client(t)) // another node
			if tc.name == "reported" {
				for i := range 5 {
					v.enter(t, a, ev, fmt.Sprint("w", i), e)
				}
			}
			for i := range 10 {
				v.enter(t, b, ev, fmt.Sprint("v", i), e)
			}
			for i := 5; i < 10; i++ {
				v.enter(t, a, ev, fmt.Sprint("w", i), e)
			}
		})
	}
}
