package turnstile_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/turnstile"
)

// TestAdmit holds Admit to its documented switch: every kind mints a token
// the issuer verifies (sub, event, position, lifetime) and is counted; a
// queue admission is marked present with its wait and, under max_active,
// recorded as a checkout session; a room admission is marked present with
// an unknown wait and no session; a pass holds admission.PassPosition and
// marks nothing.
func TestAdmit(t *testing.T) {
	lane2 := queue.Laned(2, 7)
	for _, tc := range []struct {
		name      string
		maxActive int64
		entry     turnstile.Entry
		wantPos   int64
		want      []mark // jti "*" stands for the token's jti
	}{
		{"queue", 0, turnstile.Entry{Kind: turnstile.Queue, User: "alice", Pos: 42, Waited: 90 * time.Second}, 42,
			[]mark{{call: "present", ev: "drop", pos: 42, waited: 90 * time.Second}}},
		{"queue under max_active", 5, turnstile.Entry{Kind: turnstile.Queue, User: "alice", Pos: 42, Waited: time.Second}, 42,
			[]mark{{call: "activate", ev: "drop", pos: 42, waited: 2 * time.Minute}, {call: "present", ev: "drop", pos: 42, waited: time.Second}, {call: "session", ev: "drop", pos: 42, jti: "*"}}},
		{"queue in a lane under max_active", 5, turnstile.Entry{Kind: turnstile.Queue, User: "alice", Pos: lane2}, lane2,
			[]mark{{call: "activate", ev: "drop", pos: lane2, waited: 2 * time.Minute}, {call: "present", ev: "drop", pos: lane2}, {call: "session", ev: "drop", pos: lane2, jti: "*"}}},
		{"room", 0, turnstile.Entry{Kind: turnstile.Room, User: "bob", Pos: 3, Waited: time.Hour}, 3,
			[]mark{{call: "present", ev: "drop", pos: 3, waited: -1}}},
		{"room under max_active", 5, turnstile.Entry{Kind: turnstile.Room, User: "bob", Pos: 3}, 3,
			[]mark{{call: "activate", ev: "drop", pos: 3, waited: 2 * time.Minute}, {call: "present", ev: "drop", pos: 3, waited: -1}}},
		{"pass", 0, turnstile.Entry{Kind: turnstile.Pass, User: "vip", Pos: 9}, admission.PassPosition, nil},
		{"pass under max_active", 5, turnstile.Entry{Kind: turnstile.Pass, User: "vip"}, admission.PassPosition, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iss := newIssuer(t)
			view := &fakeView{}
			var n counter
			ts := turnstile.New(iss, view, n.issued)
			cfg := &event.Config{ID: "drop", AdmissionTTLSeconds: 120, MaxActive: tc.maxActive}
			tok, a, err := ts.Admit(context.Background(), cfg, tc.entry, at)
			if err != nil {
				t.Fatal(err)
			}
			got, err := iss.Verify(tok, "drop", at.Add(time.Minute))
			if err != nil {
				t.Fatalf("the minted token does not verify: %v", err)
			}
			if got != a || a.User != tc.entry.User || a.Event != "drop" || a.Pos != tc.wantPos || a.ExpiresAt.Sub(at) != 2*time.Minute {
				t.Errorf("token %+v (Admit said %+v), want user %s, event drop, pos %d, 2 min", got, a, tc.entry.User, tc.wantPos)
			}
			want := slices.Clone(tc.want)
			for i := range want {
				if want[i].jti == "*" {
					want[i].jti = a.ID
				}
			}
			if !slices.Equal(view.marks, want) {
				t.Errorf("view got %+v, want %+v", view.marks, want)
			}
			if n.n["drop"] != 1 || len(n.n) != 1 {
				t.Errorf("metric got %v, want one token of drop", n.n)
			}
		})
	}
}

// TestAdmitRefusal: an admission the issuer refuses, or of no kind, is
// neither recorded nor counted.
func TestAdmitRefusal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   int64
		entry turnstile.Entry
	}{
		{"no user", 60, turnstile.Entry{Kind: turnstile.Queue, Pos: 1}},
		{"no position", 60, turnstile.Entry{Kind: turnstile.Room, User: "bob"}},
		{"no lifetime", 0, turnstile.Entry{Kind: turnstile.Pass, User: "vip"}},
		{"no kind", 60, turnstile.Entry{User: "bob", Pos: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view := &fakeView{}
			var n counter
			ts := turnstile.New(newIssuer(t), view, n.issued)
			tok, _, err := ts.Admit(context.Background(), &event.Config{ID: "drop", AdmissionTTLSeconds: tc.ttl, MaxActive: 5}, tc.entry, at)
			if err == nil || tok != "" {
				t.Fatalf("Admit = %q, %v; want an error", tok, err)
			}
			if len(view.marks) != 0 || len(n.n) != 0 {
				t.Errorf("a refused admission recorded %+v and counted %v", view.marks, n.n)
			}
		})
	}
}

// TestAdmitClosed: in a room staff closed no kind of admission is minted
// (an *event.ClosedError), recorded or counted, whatever way in asked:
// the turnstile holds the closure for every admission, behind the
// handlers' own check (web/shopper's door.go).
func TestAdmitClosed(t *testing.T) {
	for _, kind := range []turnstile.Kind{turnstile.Queue, turnstile.Room, turnstile.Pass} {
		view := &fakeView{}
		var n counter
		ts := turnstile.New(newIssuer(t), view, n.issued)
		cfg := &event.Config{ID: "drop", AdmissionTTLSeconds: 60, MaxActive: 5, Closed: &event.Closure{}}
		tok, _, err := ts.Admit(context.Background(), cfg, turnstile.Entry{Kind: kind, User: "bob", Pos: 1}, at)
		if !errors.Is(err, event.ErrClosed) || tok != "" {
			t.Fatalf("%v in a closed room: Admit = %q, %v; want event.ErrClosed", kind, tok, err)
		}
		if len(view.marks) != 0 || len(n.n) != 0 {
			t.Errorf("%v: an admission in a closed room recorded %+v and counted %v", kind, view.marks, n.n)
		}
	}
}

// TestAdmitUncounted: under max_active, an admission Redis could not count
// is not handed out (ErrUncounted, wrapping Redis's error): nothing is
// recorded or counted. A pass, outside max_active's count, needs no Redis.
func TestAdmitUncounted(t *testing.T) {
	down := errors.New("redis: connection refused")
	for _, kind := range []turnstile.Kind{turnstile.Queue, turnstile.Room} {
		view := &fakeView{fail: down}
		var n counter
		ts := turnstile.New(newIssuer(t), view, n.issued)
		tok, _, err := ts.Admit(context.Background(), &event.Config{ID: "drop", AdmissionTTLSeconds: 60, MaxActive: 5}, turnstile.Entry{Kind: kind, User: "bob", Pos: 1}, at)
		if !errors.Is(err, turnstile.ErrUncounted) || !errors.Is(err, down) || tok != "" {
			t.Fatalf("%v: Admit = %q, %v; want ErrUncounted wrapping Redis's error", kind, tok, err)
		}
		if len(view.marks) != 0 || len(n.n) != 0 {
			t.Errorf("%v: an uncounted admission recorded %+v and counted %v", kind, view.marks, n.n)
		}
	}
	view := &fakeView{fail: down}
	if _, _, err := turnstile.New(newIssuer(t), view, nil).Admit(context.Background(), &event.Config{ID: "drop", AdmissionTTLSeconds: 60, MaxActive: 5},
		turnstile.Entry{Kind: turnstile.Pass, User: "vip"}, at); err != nil {
		t.Fatalf("a pass under max_active: %v, want no Redis call", err)
	}
}

// TestAdmitWithoutMetric: New takes a nil metric.
func TestAdmitWithoutMetric(t *testing.T) {
	ts := turnstile.New(newIssuer(t), &fakeView{}, nil)
	if _, _, err := ts.Admit(context.Background(), &event.Config{ID: "drop", AdmissionTTLSeconds: 60}, turnstile.Entry{Kind: turnstile.Pass, User: "vip"}, at); err != nil {
		t.Fatal(err)
	}
}

// TestKindString names the kinds.
func TestKindString(t *testing.T) {
	for k, want := range map[turnstile.Kind]string{turnstile.Queue: "queue", turnstile.Room: "room", turnstile.Pass: "pass", 0: "Kind(0)"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", k, got, want)
		}
	}
}
