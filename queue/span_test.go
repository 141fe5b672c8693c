package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestShardedJoinLongAfterOpening: a queue of join shards that opened 49
// days ago (past the 2^22 − 1 seconds a packed entry holds). Two people
// join, one after the shards' view has settled the other: each is either
// refused (joining has ended) or gets a position
// once their second is settled — never a ticket that no position follows.
func TestShardedJoinLongAfterOpening(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	j := queue.NewJoiner(rdb)
	now := time.Now()
	times := queue.Times{Opens: now.Add(-49 * 24 * time.Hour), WindowEnd: now.Add(-48 * 24 * time.Hour), JoinEnd: now.Add(time.Hour), Shards: 2}
	o := queue.NewOrder(times.Shards, times.Opens)
	read := func() time.Time { // one read of every shard; the earliest shard TIME
		reads, err := j.ReadShards(ctx, "long", times.WindowEnd, time.Time{}, []int{o.ReadFrom(0), o.ReadFrom(1)})
		if err != nil {
			t.Fatal(err)
		}
		o = o.Next(reads)
		if reads[1].Now.Before(reads[0].Now) {
			return reads[1].Now
		}
		return reads[0].Now
	}
	perm := func() queue.Permutation {
		p, err := queue.NewPermutation(make([]byte, 32), max(o.Window(), 1))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := range 2 {
		user := fmt.Sprint("late", i)
		e, err := j.Join(ctx, "long", user, times)
		if errors.Is(err, queue.ErrClosed) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The joiner's second is settled once every shard's TIME is a
		// whole second past the join: read until then, and once more.
		joined := read()
		var pos int64
		for at := read(); ; at = read() {
			if pos = o.Position(perm(), queue.Place{Shard: e.Shard, Seq: e.Seq, Joined: e.JoinedAt}); pos > 0 || at.Sub(joined) > 2*time.Second {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if pos == 0 {
			t.Fatalf("%s joined 49 days after the opening (%+v) and has no position once their second is settled (settled %d of %d joined)", user, e, o.Settled(), o.Joined())
		}
	}
}

// TestMaxShardedSpanAgrees: the event's validation bound is the queue's.
func TestMaxShardedSpanAgrees(t *testing.T) {
	if event.MaxShardedSpan != queue.MaxShardedSpan {
		t.Fatalf("event.MaxShardedSpan %s, queue.MaxShardedSpan %s", event.MaxShardedSpan, queue.MaxShardedSpan)
	}
}
