package queue_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// laggingFailover is a primary and a replica; the replica stops copying
// (CLIENT PAUSE WRITE) when lag is called and is promoted when promote is.
// follow is a client that dials the primary until the promotion and the
// promoted replica after it: a node that follows the failover.
type laggingFailover struct {
	primary, replica *testenv.Redis
	follow           *redis.Client
	onPromote        func()
}

func startLaggingFailover(t *testing.T) *laggingFailover {
	t.Helper()
	f := startPrimary(t)
	f.attach(t)
	return f
}

// startPrimary starts the primary alone; attach starts its replica.
func startPrimary(t *testing.T) *laggingFailover {
	t.Helper()
	f := &laggingFailover{primary: testenv.StartRedis(t)}
	var addr atomic.Value
	addr.Store(f.primary.Addr())
	f.follow = redis.NewClient(&redis.Options{
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr.Load().(string))
		},
		MaxRetries: 5,
	})
	t.Cleanup(func() { _ = f.follow.Close() })
	f.onPromote = func() { addr.Store(f.replica.Addr()) }
	return f
}

// attach starts the primary's replica.
func (f *laggingFailover) attach(t *testing.T) {
	t.Helper()
	f.replica = testenv.StartRedis(t, testenv.WithReplicaOf(f.primary.Addr()))
}

// lag waits until the replica has every write so far, then stops it
// applying more.
func (f *laggingFailover) lag(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := testenv.WaitSynced(ctx, f.primary.Client(t), f.replica.Client(t), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.replica.Client(t).Do(ctx, "CLIENT", "PAUSE", 300000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
}

// promote kills the primary and promotes the lagging replica.
func (f *laggingFailover) promote(t *testing.T, ctx context.Context) {
	t.Helper()
	f.primary.Kill(t)
	for _, cmd := range [][]any{{"REPLICAOF", "NO", "ONE"}, {"CLIENT", "UNPAUSE"}} {
		if err := f.replica.Client(t).Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f.onPromote()
}

// tickets records which user holds each (lane, shard, seq).
type tickets map[[3]int64]string

func (tk tickets) join(t *testing.T, ctx context.Context, j *queue.Joiner, ev, user string, times queue.Times) queue.Entry {
	t.Helper()
	e, err := j.Join(ctx, ev, user, times)
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	lane, n := queue.Unlane(e.Seq)
	k := [3]int64{int64(lane), int64(e.Shard), n}
	if u, ok := tk[k]; ok && u != user {
		t.Fatalf("%s was given seq %d (lane %d, shard %d), the seq of %s's ticket", user, n, lane, e.Shard, u)
	}
	tk[k] = user
	return e
}

// TestJoinAfterLaggingFailover: joins the old primary answered while its
// replica had stopped copying are lost with it, and their people keep
// their tickets. Joins on the promoted replica, from another node that
// never saw those tickets, must not be given their sequence numbers: no
// position is given twice. For a queue, a lane and a queue of join shards.
//
// It failed before join.lua fenced the counter with the replication id
// (v6): "v0 was given seq 4 (lane 0, shard 0), the seq of u3's ticket".
func TestJoinAfterLaggingFailover(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name  string
		times queue.Times
	}{
		{"queue", queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(time.Hour), JoinEnd: now.Add(2 * time.Hour)}},
		{"window closed", queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(-time.Second), JoinEnd: now.Add(2 * time.Hour)}},
		{"lane", queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(time.Hour), JoinEnd: now.Add(2 * time.Hour), Lane: 1}},
		{"shards", queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(time.Hour), JoinEnd: now.Add(2 * time.Hour), Shards: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f := startLaggingFailover(t)
			tk := tickets{}
			a := queue.NewJoiner(f.follow)
			for i := range 3 {
				tk.join(t, ctx, a, "lag", fmt.Sprint("u", i), tc.times)
			}
			f.lag(t, ctx)
			for i := 3; i < 20; i++ { // answered by the primary alone
				tk.join(t, ctx, a, "lag", fmt.Sprint("u", i), tc.times)
			}
			f.promote(t, ctx)
			b := queue.NewJoiner(f.replica.Client(t)) // another node
			var late []queue.Entry
			for i := range 20 {
				late = append(late, tk.join(t, ctx, b, "lag", fmt.Sprint("v", i), tc.times))
			}
			for i := range 5 { // the first node too, after the other
				tk.join(t, ctx, a, "lag", fmt.Sprint("w", i), tc.times)
			}
			if tc.name == "window closed" {
				// Every position is its seq: a bijection with the tickets.
				p, err := queue.NewPermutation(make([]byte, 32), max(late[0].Window, 1))
				if err != nil {
					t.Fatal(err)
				}
				seen := map[int64]string{}
				for k, u := range tk {
					pos := queue.Position(p, k[2])
					if o, ok := seen[pos]; ok {
						t.Fatalf("position %d held by %s and %s", pos, o, u)
					}
					seen[pos] = u
				}
			}
		})
	}
}

// TestJoinAfterLaggingFailoverReported: more joins are lost than the
// counter's jump alone covers, all answered through one node. That node
// reports the highest sequence number it handed out with its next join, so
// the promoted counter moves past every one of its tickets.
//
// It failed before the Joiner reported its highest sequence number
// (join.lua v6 without ARGV[6]): "w0 was given seq ..., the seq of u...'s
// ticket".
func TestJoinAfterLaggingFailoverReported(t *testing.T) {
	now := time.Now()
	times := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(time.Hour), JoinEnd: now.Add(2 * time.Hour)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := startLaggingFailover(t)
	tk := tickets{}
	a := queue.NewJoiner(f.follow)
	tk.join(t, ctx, a, "rep", "u0", times)
	f.lag(t, ctx)
	for i := 1; i < 400; i++ {
		tk.join(t, ctx, a, "rep", fmt.Sprint("u", i), times)
	}
	f.promote(t, ctx)
	for i := range 5 {
		tk.join(t, ctx, a, "rep", fmt.Sprint("w", i), times)
	}
	b := queue.NewJoiner(f.replica.Client(t))
	for i := range 5 {
		tk.join(t, ctx, b, "rep", fmt.Sprint("v", i), times)
	}
}

// TestJoinAfterLaggingFailoverAttachedLate: the primary takes a new
// replication id when its first replica attaches, after the first joins,
// so its next join moves the counter past the fence: a move the lagging
// replica never copies. The promoted replica, whose fence was copied from
// before that id, must move past the old primary's move too.
//
// It failed before seqfence.lua moved such a counter twice as far: "v0 was
// given seq 40 (lane 0, shard 0), the seq of u3's ticket".
func TestJoinAfterLaggingFailoverAttachedLate(t *testing.T) {
	now := time.Now()
	times := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(time.Hour), JoinEnd: now.Add(2 * time.Hour)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := startPrimary(t)
	tk := tickets{}
	a := queue.NewJoiner(f.follow)
	for i := range 3 {
		tk.join(t, ctx, a, "late", fmt.Sprint("u", i), times)
	}
	f.attach(t)
	f.lag(t, ctx)
	for i := 3; i < 10; i++ { // answered by the primary alone
		tk.join(t, ctx, a, "late", fmt.Sprint("u", i), times)
	}
	f.promote(t, ctx)
	b := queue.NewJoiner(f.replica.Client(t)) // another node
	for i := range 10 {
		tk.join(t, ctx, b, "late", fmt.Sprint("v", i), times)
	}
}
