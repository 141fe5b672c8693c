package admission_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// room returns a safety-net entrance open since a minute ago.
func room(user string, rate float64, maxActive int64, ttl time.Duration) admission.Entrance {
	now := time.Now()
	return admission.Entrance{User: user, Opens: now.Add(-time.Minute), Ends: now.Add(time.Hour), Rate: rate, MaxActive: maxActive, AdmissionTTL: ttl}
}

// frontier returns a Frontier on a fresh redis-server.
func frontier(t *testing.T) (*admission.Frontier, *testenv.Redis) {
	t.Helper()
	r := testenv.StartRedis(t)
	return admission.NewFrontier(r.Client(t)), r
}

func enter(t *testing.T, f *admission.Frontier, ev string, e admission.Entrance) admission.Entered {
	t.Helper()
	en, err := f.Enter(context.Background(), ev, e)
	if err != nil {
		t.Fatalf("enter %q: %v", e.User, err)
	}
	return en
}

// TestEnterSafetyNet: under max_active everyone is admitted at once; the
// next one queues (and the gate, admit only, refuses); an active entry is
// returned as it is; once the admissions expire, the frontier admits the
// queued person, and someone whose admission expired gets a new entry,
// admitted at once again.
func TestEnterSafetyNet(t *testing.T) {
	f, _ := frontier(t)
	const ev = "net"
	ttl := time.Second
	for i := range 3 {
		en := enter(t, f, ev, room(fmt.Sprint("u", i), 1000, 3, ttl))
		if !en.Admitted || en.Existing || en.Seq != int64(i+1) {
			t.Fatalf("u%d: %+v, want admitted at once with seq %d", i, en, i+1)
		}
	}
	if en := enter(t, f, ev, room("u3", 1000, 3, ttl)); en.Admitted || en.Seq != 4 {
		t.Fatalf("u3 above the threshold: %+v, want queued with seq 4", en)
	}
	gate := room("", 1000, 3, ttl)
	gate.AdmitOnly = true
	if _, err := f.Enter(context.Background(), ev, gate); !errors.Is(err, admission.ErrFull) {
		t.Fatalf("gate while someone waits: %v, want ErrFull", err)
	}
	if en := enter(t, f, ev, room("u0", 1000, 3, ttl)); !en.Admitted || !en.Existing || en.Seq != 1 {
		t.Fatalf("u0 again while active: %+v, want its admitted entry 1", en)
	}
	if en := enter(t, f, ev, room("u3", 1000, 3, ttl)); en.Admitted || !en.Existing || en.Seq != 4 {
		t.Fatalf("u3 again: %+v, want its waiting entry 4", en)
	}

	// The tick admits u3 once the three admissions expire.
	step := admission.Step{Start: time.Now().Add(-time.Minute), Rate: 1000, Grace: time.Minute, MaxActive: 3, AdmissionTTL: ttl}
	deadline := time.Now().Add(15 * time.Second)
	for {
		rd, err := f.Advance(context.Background(), ev, step)
		if err != nil {
			t.Fatal(err)
		}
		if rd.Frontier >= 4 && rd.Active == 0 { // all three admissions expired (they were a moment apart)
			if rd.Frontier != 4 {
				t.Fatalf("frontier %v, want 4", rd.Frontier)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("u3 never admitted: %+v", rd)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if en := enter(t, f, ev, room("u3", 1000, 3, ttl)); !en.Admitted || en.Seq != 4 {
		t.Fatalf("u3 after the frontier passed: %+v, want admitted at 4", en)
	}
	// u0's admission expired: leaving ended its turn, a new entry follows
	// (admitted at once: u3 is the only one active).
	if en := enter(t, f, ev, room("u0", 1000, 3, ttl)); !en.Admitted || en.Existing || en.Seq != 5 {
		t.Fatalf("u0 after its admission expired: %+v, want a new entry 5 admitted at once", en)
	}
}

// TestEnterThresholdConcurrent: 60 people enter at once a room of
// max_active 10; exactly 10 are admitted at once and 50 queue, with
// distinct sequence numbers.
func TestEnterThresholdConcurrent(t *testing.T) {
	f, _ := frontier(t)
	var mu sync.Mutex
	admitted, seqs := 0, map[int64]bool{}
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			en, err := f.Enter(context.Background(), "crowd", room(fmt.Sprint("c", i), 1000, 10, time.Minute))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if en.Admitted {
				admitted++
			}
			seqs[en.Seq] = true
		}()
	}
	wg.Wait()
	if admitted != 10 || len(seqs) != 60 {
		t.Fatalf("admitted %d with %d distinct seqs, want 10 and 60", admitted, len(seqs))
	}
}

// TestEnterRateCap: with a rate of 0.01 a second (a credit of one) only the
// first of many is admitted at once; the rest queue, and the tick's frontier
// does not admit them either: the instant admission used the rate.
func TestEnterRateCap(t *testing.T) {
	f, _ := frontier(t)
	const ev = "slow"
	gate := room("", 0.01, 100, time.Minute)
	gate.AdmitOnly = true
	ok := 0
	for range 10 {
		_, err := f.Enter(context.Background(), ev, gate)
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, admission.ErrFull):
			t.Fatal(err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of 10 admitted at once, want 1", ok)
	}
	for i := range 5 {
		if en := enter(t, f, ev, room(fmt.Sprint("q", i), 0.01, 100, time.Minute)); en.Admitted {
			t.Fatalf("q%d admitted at once past the rate: %+v", i, en)
		}
	}
	step := admission.Step{Start: time.Now().Add(-time.Minute), Rate: 0.01, Grace: time.Minute, MaxActive: 100, AdmissionTTL: time.Minute}
	for range 3 {
		rd, err := f.Advance(context.Background(), ev, step)
		if err != nil {
			t.Fatal(err)
		}
		if rd.Frontier >= 2 || rd.Joined != 6 {
			t.Fatalf("tick: %+v, want the frontier below 2 of 6 joined", rd)
		}
	}
}

// TestEnterTimes: before the room opens and after it ends, Enter refuses.
func TestEnterTimes(t *testing.T) {
	f, _ := frontier(t)
	e := room("u", 10, 10, time.Minute)
	e.Opens = time.Now().Add(time.Hour)
	if _, err := f.Enter(context.Background(), "times", e); !errors.Is(err, queue.ErrNotOpen) {
		t.Errorf("before opening: %v, want ErrNotOpen", err)
	}
	e.Opens, e.Ends = time.Now().Add(-time.Hour), time.Now().Add(-time.Minute)
	if _, err := f.Enter(context.Background(), "times", e); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("after the end: %v, want ErrClosed", err)
	}
}

// TestEnterNoShowStartsAgain: in a safety-net room, someone the frontier
// admitted who never fetched the admission token is a no-show once the
// grace has passed, and the frontier admits the next person in their
// place. When the no-show comes back, their turn has ended (the script's
// rule, docs/integrate.md's "Leaving"): they get a new entry at the back — not an
// admission at once above max_active.
func TestEnterNoShowStartsAgain(t *testing.T) {
	f, _ := frontier(t)
	const ev = "noshow"
	ttl := time.Second
	if en := enter(t, f, ev, room("u0", 1000, 1, ttl)); !en.Admitted {
		t.Fatalf("u0: %+v, want admitted at once", en)
	}
	for i, u := range []string{"u1", "u2"} {
		if en := enter(t, f, ev, room(u, 1000, 1, ttl)); en.Admitted || en.Seq != int64(i+2) {
			t.Fatalf("%s: %+v, want queued at %d", u, en, i+2)
		}
	}
	// u0's admission expires: u1 is admitted and never comes; after the
	// grace u1 is a no-show and u2 is admitted in its place.
	step := admission.Step{Start: time.Now().Add(-time.Minute), Rate: 1000, Grace: time.Second, MaxActive: 1, AdmissionTTL: ttl}
	deadline := time.Now().Add(20 * time.Second)
	for {
		rd, err := f.Advance(context.Background(), ev, step)
		if err != nil {
			t.Fatal(err)
		}
		if rd.Frontier >= 3 {
			if rd.NoShows != 1 {
				t.Fatalf("frontier %v with %d no-shows, want u1 the one no-show", rd.Frontier, rd.NoShows)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("u1 never a no-show: %+v", rd)
		}
		time.Sleep(50 * time.Millisecond)
	}
	en := enter(t, f, ev, room("u1", 1000, 1, ttl))
	if en.Admitted || en.Existing || en.Seq != 4 {
		t.Fatalf("u1 back after being a no-show: %+v, want a new entry 4, queued (u2 holds the one place)", en)
	}
	// u2, admitted and within its grace, still has its turn.
	if en := enter(t, f, ev, room("u2", 1000, 1, ttl)); !en.Admitted || !en.Existing || en.Seq != 3 {
		t.Fatalf("u2 within its grace: %+v, want its admitted entry 3", en)
	}
}
