package queue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/queue"
)

// TestFirstReadAfterLaggingFailoverGivesNoPositionTwice: the window is
// open when the replica stops copying; on the promoted replica the first
// script is not a join but a shard read (join_shards 4) or a frontier step
// (one slot), which freezes W. No two people get the same position, every
// person whose join the promoted server lost (who keeps a ticket) has one,
// and everyone who joined while the window was open is in it.
//
// Why: readshard.lua and advance.lua fence the counter (seq_fence) before
// they freeze W_s or W from it, as join.lua does, so W is frozen from the
// moved counter: the lost joiners' seqs lie inside the window and π places
// them like everyone in it; the numbers the jump skipped are nobody's
// (no-shows).
// It failed before readshard.lua v4, when the read froze W_s from the
// unmoved counter and a lost joiner of a shard was never placed: "u12,
// whose join the promoted server lost, has no position" (48 of 60); and
// before advance.lua v13, when the step froze W from the unmoved counter
// and the lost joiners of one slot stood after the window: "u12 joined in
// the window but stands after it: position 13, W 12".
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
				for s, sr := range r {
					if sr.Window < 0 {
						t.Fatalf("shard %d not frozen by the read", s)
					}
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
			var window int64 // W, frozen
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
				window = o.Window()
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
				window = w
				t.Logf("W %d", w)
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
			slices.Sort(unplaced)
			for _, u := range unplaced {
				if u[0] == 'u' && u >= "u12" && len(u) == 3 {
					t.Errorf("%s, whose join the promoted server lost, has no position", u)
				} else {
					t.Errorf("%s has no position", u)
				}
			}
			// Everyone the first node placed while the window was open
			// (the lost joiners too) is in it: a position within 1..W.
			var after []string
			for u, e := range entries {
				if u[0] == 'u' && position(e) > window {
					after = append(after, u)
				}
			}
			slices.Sort(after)
			for _, u := range after {
				t.Errorf("%s joined in the window but stands after it: position %d, W %d", u, position(entries[u]), window)
			}
			t.Logf("%d placed, %d without a position, %d of the window's after it", len(seen), len(unplaced), len(after))
		})
	}
}
