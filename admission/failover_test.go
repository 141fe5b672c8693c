package admission_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
)

// holders counts the people holding an unexpired admission of a room: each
// admission lasts the room's TTL from the moment the caller could mint its
// token (when Enter returned, or when a tick admitted the position).
type holders struct {
	ttl time.Duration
	at  []time.Time
	who []string
}

func (h *holders) add(who string, at time.Time) {
	h.at = append(h.at, at)
	h.who = append(h.who, who)
}

// now counts the admissions unexpired at t.
func (h *holders) now(t time.Time) (n int, who []string) {
	for i, at := range h.at {
		if at.Add(h.ttl).After(t) {
			n++
			who = append(who, h.who[i])
		}
	}
	return n, who
}

// TestRoomAfterLaggingFailover: a safety-net room of max_active 4 admits
// four people at once, the last two only on the primary (the replica has
// stopped copying). The primary dies and the lagging replica is promoted:
// it has lost two of the four admissions (their ZADDs, the frontier, the
// counter), but the two people hold valid tokens, which cannot be revoked.
// Neither the room's join nor its tick may admit anyone while the four
// admissions last: at no time may more than max_active people hold an
// unexpired admission. Once they have expired (one admission TTL and the
// grace after the promoted server noticed), the room admits again; the
// positions the counter's failover fence skipped are nobody's, so the
// tick passes them as no-shows and only people who entered count.
//
// It failed before the room's count recorded the server it was kept on
// (enter.lua v2, advance.lua v10): the promoted replica admitted two
// more at once, six people in a room of four.
func TestRoomAfterLaggingFailover(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ev, maxActive = "failover", 4
	ttl, grace := 3*time.Second, time.Second
	entrance := func(user string) admission.Entrance {
		e := room(user, 1000, maxActive, ttl)
		e.NoShowGrace = grace
		return e
	}
	step := admission.Step{Start: time.Now().Add(-time.Minute), Rate: 1000, Grace: grace, MaxActive: maxActive, AdmissionTTL: ttl}
	h := &holders{ttl: ttl}

	old := admission.NewFrontier(primary.Client(t))
	for i := range 2 {
		if en := enter(t, old, ev, entrance(fmt.Sprint("u", i))); !en.Admitted {
			t.Fatalf("u%d: %+v, want admitted at once", i, en)
		}
		h.add(fmt.Sprint("u", i), time.Now())
	}
	if _, err := old.Advance(ctx, ev, step); err != nil { // a tick on the primary: the room's count is kept there
		t.Fatal(err)
	}
	if err := testenv.WaitSynced(ctx, primary.Client(t), replica.Client(t), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The replica stops copying; two more are admitted on the primary alone.
	if err := replica.Client(t).Do(ctx, "CLIENT", "PAUSE", 300000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < maxActive; i++ {
		if en := enter(t, old, ev, entrance(fmt.Sprint("u", i))); !en.Admitted {
			t.Fatalf("u%d: %+v, want admitted at once", i, en)
		}
		h.add(fmt.Sprint("u", i), time.Now())
	}
	primary.Kill(t)
	for _, cmd := range [][]any{{"REPLICAOF", "NO", "ONE"}, {"CLIENT", "UNPAUSE"}} {
		if err := replica.Client(t).Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// On the promoted replica: people keep arriving and the tick runs;
	// whoever the tick admits fetches a token at once (marked present).
	// The positions the counter's failover fence skipped are nobody's
	// (or u2's and u3's, who hold their admissions already): the tick
	// admits them, and they never come (no-shows).
	f := admission.NewFrontier(replica.Client(t))
	admitted := map[int64]bool{1: true, 2: true} // as the replica knows
	queued := map[int64]string{}                 // position -> who entered on the replica
	var present []int64
	check := func(what string) {
		t.Helper()
		if n, who := h.now(time.Now()); n > maxActive {
			t.Fatalf("%s: %d people hold an unexpired admission, max_active %d: %v", what, n, maxActive, who)
		}
	}
	resumed := false
	deadline := time.Now().Add(30 * time.Second)
	for i := maxActive; !resumed; i++ {
		if time.Now().After(deadline) {
			t.Fatal("the room never admitted again after the failover")
		}
		u := fmt.Sprint("u", i)
		en := enter(t, f, ev, entrance(u))
		if en.Admitted && !en.Existing {
			admitted[en.Seq] = true
			h.add(fmt.Sprintf("%s@%d", u, en.Seq), time.Now())
			check(u + " admitted at once")
			resumed = true
		} else if !en.Admitted {
			queued[en.Seq] = u
		}
		s := step
		s.Present, present = present, nil
		rd, err := f.Advance(ctx, ev, s)
		if err != nil {
			t.Fatal(err)
		}
		for q := int64(1); q <= int64(rd.Frontier); q++ {
			if u, ok := queued[q]; ok && !admitted[q] {
				admitted[q] = true
				present = append(present, q)
				h.add(fmt.Sprintf("%s@%d", u, q), time.Now())
				check(fmt.Sprintf("position %d (%s) admitted by the tick", q, u))
				resumed = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRoomFenceOlderHash: a room whose frontier hash an older version
// wrote (no replication id recorded) is not held: the first step records
// the server's id and admits as before; a step that then finds another id
// holds the room.
func TestRoomFenceOlderHash(t *testing.T) {
	f, r := frontier(t)
	rdb := r.Client(t)
	ctx := context.Background()
	const ev = "older"
	ttl := time.Minute
	if en := enter(t, f, ev, room("u0", 1000, 4, ttl)); !en.Admitted {
		t.Fatalf("u0: %+v, want admitted at once", en)
	}
	key := "ar:{" + ev + "}:adm"
	id, err := rdb.HGet(ctx, key, "r").Result()
	if err != nil || id == "" {
		t.Fatalf("replication id recorded: %q %v, want the server's", id, err)
	}
	if err := rdb.HDel(ctx, key, "r", "rh").Err(); err != nil { // as the previous version left it
		t.Fatal(err)
	}
	if en := enter(t, f, ev, room("u1", 1000, 4, ttl)); !en.Admitted {
		t.Fatalf("u1 on a hash without a recorded id: %+v, want admitted at once (no hold)", en)
	}
	if got := rdb.HGet(ctx, key, "r").Val(); got != id {
		t.Fatalf("recorded id %q, want %q", got, id)
	}
	// Another server's id (as after a promotion): held.
	if err := rdb.HSet(ctx, key, "r", "0000000000000000000000000000000000000000").Err(); err != nil {
		t.Fatal(err)
	}
	if en := enter(t, f, ev, room("u2", 1000, 4, ttl)); en.Admitted {
		t.Fatalf("u2 after the id changed: %+v, want queued (held for the admission TTL)", en)
	}
	if en := enter(t, f, ev, room("u0", 1000, 4, ttl)); !en.Admitted || !en.Existing {
		t.Fatalf("u0, admitted before, during the hold: %+v, want its admission back", en)
	}
	rd, err := f.Advance(ctx, ev, admission.Step{Start: time.Now().Add(-time.Minute), Rate: 1000, Grace: time.Second, MaxActive: 4, AdmissionTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if rd.Frontier != 2 {
		t.Fatalf("frontier %v during the hold, want 2 (u2 waits)", rd.Frontier)
	}
}
