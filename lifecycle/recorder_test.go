package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// Two nodes observing the same transitions, in any interleaving and with
// stale views, publish each lifecycle event once.
func TestTransitionsOnceFromTwoNodes(t *testing.T) {
	eachServers(t, func(t *testing.T, s servers) {
		_, jsA := s.connect(t)
		_, jsB := s.connect(t)
		a, b := NewRecorder(s.rdb, jsA), NewRecorder(s.rdb, jsB)
		ctx := context.Background()
		start := sale("twice", 1, time.Time{}).Config.StartsAt
		steps := []struct {
			version int64
			paused  bool
			at      time.Duration // from starts_at
			frozen  bool
			soldOut bool
			closed  bool
		}{
			{1, false, -time.Minute, false, false, false},
			{2, true, -time.Second, false, false, false},  // paused
			{1, false, 0, false, false, false},            // a stale view: no resume
			{3, false, time.Second, true, false, false},   // resumed, opened, window closed
			{4, true, 2 * time.Second, true, true, false}, // paused again, sold out
			{5, true, 3 * time.Second, true, true, true},  // closed by staff
			{4, true, 3 * time.Second, true, true, false}, // a stale view: no reopening
			{6, true, 4 * time.Second, true, true, false}, // reopened
			{7, true, time.Hour, true, true, true},        // closed again, ended
		}
		for _, st := range steps {
			sl := sale("twice", st.version, start.Add(st.at))
			sl.Config.Paused, sl.WindowFrozen, sl.SoldOut, sl.Window = st.paused, st.frozen, st.soldOut, 0
			if st.closed {
				sl.Config.Closed = &event.Closure{}
			}
			for _, r := range []*Recorder{a, b, a} {
				if err := r.Observe(ctx, sl); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := subjectCounts(t, jsA, "twice")
		want := map[string]uint64{"paused": 2, "resumed": 1, "closed": 2, "reopened": 1, "sale_opened": 1, "window_closed": 1, "sold_out": 1, "sale_ended": 1}
		for typ, n := range want {
			if got[typ] != n {
				t.Errorf("%s: got %d messages, want %d (all: %v)", typ, got[typ], n, got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("got subjects %v, want %v", got, want)
		}
		recent, err := a.Recent(ctx, "twice", 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(recent) != 10 {
			t.Errorf("recent list holds %d events, want 10", len(recent))
		}
	})
}

// An event recorded by a node that could not publish it is published by
// the next node that observes the sale: nothing is lost between the
// script and the publish.
func TestOutboxPublishedByAnotherNode(t *testing.T) {
	eachServers(t, func(t *testing.T, s servers) {
		ncA, jsA := s.connect(t)
		_, jsB := s.connect(t)
		ctx := context.Background()
		sl := sale("lost", 1, time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC))
		ncA.Close() // node A records, then cannot publish
		if err := NewRecorder(s.rdb, jsA).Observe(ctx, sl); err == nil {
			t.Fatal("observe with a closed connection: got no error")
		}
		if n, _ := s.rdb.HLen(ctx, outboxKey("lost")).Result(); n != 1 {
			t.Fatalf("outbox holds %d entries, want 1", n)
		}
		if err := NewRecorder(s.rdb, jsB).Observe(ctx, sl); err != nil {
			t.Fatal(err)
		}
		if got := subjectCounts(t, jsB, "lost")["sale_opened"]; got != 1 {
			t.Errorf("sale_opened: %d messages, want 1", got)
		}
		if n, _ := s.rdb.HLen(ctx, outboxKey("lost")).Result(); n != 0 {
			t.Errorf("outbox holds %d entries after the publish, want 0", n)
		}
	})
}

// your_turn names the user of every admitted position, through the
// window's permutation and the seq → user record the Joiner keeps.
func TestYourTurnNamesAdmittedUsers(t *testing.T) {
	eachServers(t, func(t *testing.T, s servers) {
		_, js := s.connect(t)
		ctx := context.Background()
		j := NewJoiner(queue.NewJoiner(s.rdb), s.rdb, func(string) bool { return true })
		opens := time.Now().Add(-time.Minute)
		users := map[int64]string{}
		for _, u := range []string{"ann", "bob", "cat", "dan", "eve"} {
			e, err := j.Join(ctx, "turns", u, queue.Times{Opens: opens, WindowEnd: time.Now().Add(time.Hour), JoinEnd: time.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			users[e.Seq] = u
		}
		sl := sale("turns", 1, time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC))
		sl.Config.Webhooks = []event.Webhook{{URL: "https://shop.example/hook", Secret: "0123456789abcdef", Events: []string{"your_turn"}}}
		seed, _ := queue.ParseSeedHex(sl.Config.Seed)
		perm, err := queue.NewPermutation(seed, 4) // the first four joined in the window
		if err != nil {
			t.Fatal(err)
		}
		sl.WindowFrozen, sl.Window, sl.Perm, sl.Joined = true, 4, perm, 5
		r := NewRecorder(s.rdb, js)
		for _, f := range []float64{0, 3.5, 5} { // first observation learns the cursor
			sl.Frontier = f
			if err := r.Observe(ctx, sl); err != nil {
				t.Fatal(err)
			}
		}
		recent, err := r.Recent(ctx, "turns", 50)
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]int64{}
		for _, raw := range recent {
			var e Event
			if err := jsonUnmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type != YourTurn {
				continue
			}
			p, _ := e.Data["position"].(float64)
			q, _ := e.Data["seq"].(float64)
			pos, seq := int64(p), int64(q)
			if queue.Position(perm, seq) != pos {
				t.Errorf("event %s: seq %d is at position %d, not %d", e.ID, seq, queue.Position(perm, seq), pos)
			}
			user, _ := e.Data["user"].(string)
			if users[seq] != user {
				t.Errorf("event %s: user %q, want %q", e.ID, user, users[seq])
			}
			named[user] = pos
		}
		if len(named) != 5 {
			t.Errorf("your_turn for %d users, want 5: %v", len(named), named)
		}
		if got := subjectCounts(t, js, "turns")["your_turn"]; got != 5 {
			t.Errorf("your_turn: %d messages, want 5", got)
		}
	})
}
