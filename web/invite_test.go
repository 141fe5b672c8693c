package web

import (
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

func TestInvites(t *testing.T) {
	if _, err := NewInvites(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte secret was accepted")
	}
	inv, _ := NewInvites(limSecret)
	other, _ := NewInvites(make([]byte, 32))
	now := time.Unix(1_800_000_000, 0)
	tok := inv.Sign("ev", "alice", now.Add(time.Hour))
	cases := []struct {
		name, tok, ev, user string
		at                  time.Time
		ok                  bool
	}{
		{"valid", tok, "ev", "alice", now, true},
		{"replayed by the same user", tok, "ev", "alice", now.Add(time.Minute), true},
		{"another user", tok, "ev", "bob", now, false},
		{"another event", tok, "ev2", "alice", now, false},
		{"expired", tok, "ev", "alice", now.Add(time.Hour), false},
		{"another deployment", other.Sign("ev", "alice", now.Add(time.Hour)), "ev", "alice", now, false},
		{"expiry moved", "inv1.1900000000" + tok[len("inv1.1800003600"):], "ev", "alice", now, false},
		{"leading zero", "inv1.0" + tok[len("inv1."):], "ev", "alice", now, false},
		{"empty", "", "ev", "alice", now, false},
		{"garbage", "inv1.x.y", "ev", "alice", now, false},
	}
	for _, tc := range cases {
		if err := inv.Verify(tc.tok, tc.ev, tc.user, tc.at); (err == nil) != tc.ok {
			t.Errorf("%s: got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestInviteOnlyJoin: without an invite, or with another user's, join is
// refused 403 invite_required; with one it passes, repeatedly.
func TestInviteOnlyJoin(t *testing.T) {
	app := limApp(t, Config{}, limSale(event.Limits{InviteOnly: true}), Deps{})
	inv, _ := NewInvites(limSecret)
	tok := inv.Sign("ev", "alice", time.Now().Add(time.Hour))
	for _, tc := range []struct {
		user, tok string
		status    int
		code      string
	}{
		{"alice", "", 403, "invite_required"},
		{"bob", tok, 403, "invite_required"},
		{"alice", tok, 200, ""},
		{"alice", tok, 200, ""},
	} {
		a := limDo(t, app, "POST", "/events/ev/join", map[string]string{"X-User-ID": tc.user, InviteHeader: tc.tok}, nil)
		if a.status != tc.status || a.code() != tc.code {
			t.Fatalf("join as %s: %d %v, want %d %s", tc.user, a.status, a.body, tc.status, tc.code)
		}
	}
}
