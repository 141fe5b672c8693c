package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/queue"
)

// TestFirstReadAfterLaggingFailoverGivesNoPositionTwice: the window is
// open when the replica stops copying; on the promoted replica the first
// script is not a join but a shard read (join_shards 4) or a frontier step
// (one slot), which freezes W from the counter before any join has moved
// it past the lost joins. No two people get the same position.
//
// Why: the lost joiners' seqs lie above the frozen W (W_s) and below every
// seq given on the promoted server (the fence moves the counter past them
// at its first join). On one slot a seq above W is its own position, so
// they keep positions W+1.., below every later joiner's. In a join shard a
// seq above W_s is placed only through a seconds-list entry, and every
// entry on the promoted server starts at a seq above theirs (Order.Position
// then finds j < 1): they get no position (0), never someone else's. That
// is the cost of this path, logged here: a lost joiner of a shard is never
// placed, where a join first would have kept them in the window.
func TestFirstReadAfterLaggingFailoverGivesNoPositionTwice(t *testing.T) {
	for _, shards := range []int{4, 0} {
		t.Run(fmt.Sprint("shards ", shards), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			now := time.Now()
			open := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(time.Hour), JoinEnd: now.Add(2 * time.Hour), Shards: shards}
			closed := open
			closed.WindowEnd = now.Add(-time.Second) // judged by Redis TIME at each call
			const ev = "first"
			f := startLaggingFailover(t)
			tk := tickets{}
			entries := map[string]queue.Entry{}
			a := queue.NewJoiner(f.follow)
			for i := range 12 {
				entries[fmt.Sprint("u", i)] = tk.join(t, ctx, a, ev, fmt.Sprint("u", i), open)
			}
			f.lag(t, ctx)
			for i := 12; i < 60; i++ { // answered by the primary alone
				entries[fmt.Sprint("u", i)] = tk.join(t, ctx, a, ev, fmt.Sprint("u", i), open)
			}
			f.promote(t, ctx)
			b := queue.NewJoiner(f.replica.Client(t)) // another node
			// The first script on the promoted server freezes W.
			if shards > 1 {
				r, err := b.ReadShards(ctx, ev, closed.WindowEnd, time.Time{}, make([]int, shards))
				if err != nil {
					t.Fatal(err)
				}
				var w int64
				for s, sr := range r {
					if sr.Window < 0 {
						t.Fatalf("shard %d not frozen by the read", s)
					}
					w += sr.Window
				}
				if w != 12 {
					t.Fatalf("the read froze W = %d, want the 12 joins the replica copied", w)
				}
			} else {
				fr := admission.NewFrontier(f.replica.Client(t))
				if _, err := fr.Advance(ctx, ev, admission.Step{Start: closed.WindowEnd, Rate: 1, Grace: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 40 {
				entries[fmt.Sprint("v", i)] = tk.join(t, ctx, b, ev, fmt.Sprint("v", i), closed)
			}
			for i := range 10 { // the first node too
				entries[fmt.Sprint("w", i)] = tk.join(t, ctx, a, ev, fmt.Sprint("w", i), closed)
			}

			var position func(e queue.Entry) int64
			if shards > 1 {
				// Read until the second of everyone who joined on the
				// promoted server is settled.
				o := queue.NewOrder(shards, open.Opens)
				err := wait.Until(20*time.Second, 100*time.Millisecond, func() error {
					from := make([]int, shards)
					for s := range from {
						from[s] = o.ReadFrom(s)
					}
					r, err := b.ReadShards(ctx, ev, closed.WindowEnd, time.Time{}, from)
					if err != nil {
						return wait.Stop(err)
					}
					o = o.Next(r)
					if o.Window() < 0 {
						return fmt.Errorf("window not frozen")
					}
					p, err := queue.NewPermutation(make([]byte, 32), o.Window())
					if err != nil {
						return wait.Stop(err)
					}
					for u, e := range entries {
						if u[0] != 'u' && o.Position(p, queue.Place{Shard: e.Shard, Seq: e.Seq, Joined: e.JoinedAt}) == 0 {
							return fmt.Errorf("%s not placed yet", u)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				p, err := queue.NewPermutation(make([]byte, 32), o.Window())
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("W %d (W_s %v), settled %d, joined %d", o.Window(), o.Windows(), o.Settled(), o.Joined())
				position = func(e queue.Entry) int64 {
					return o.Position(p, queue.Place{Shard: e.Shard, Seq: e.Seq, Joined: e.JoinedAt})
				}
			} else {
				w := entries["w9"].Window
				p, err := queue.NewPermutation(make([]byte, 32), w)
				if err != nil {
					t.Fatal(err)
				}
				if w != 12 {
					t.Fatalf("the frontier step froze W = %d, want the 12 joins the replica copied", w)
				}
				position = func(e queue.Entry) int64 { return queue.Position(p, e.Seq) }
			}
			seen := map[int64]string{}
			var unplaced []string
			for u, e := range entries {
				pos := position(e)
				if pos == 0 {
					unplaced = append(unplaced, u)
					continue
				}
				if o, ok := seen[pos]; ok {
					t.Fatalf("position %d held by %s and %s", pos, o, u)
				}
				seen[pos] = u
			}
			for u := range entries {
				if u[0] != 'u' && position(entries[u]) == 0 {
					t.Errorf("%s, who joined on the promoted server, has no position", u)
				}
			}
			t.Logf("%d placed; no position (lost joiners of a shard): %d %v", len(seen), len(unplaced), unplaced)
		})
	}
}
