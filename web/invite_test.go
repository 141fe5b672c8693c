package web

import (
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
)

// TestInviteOnlyJoin: without an invite, or with another user's, join is
// refused 403 invite_required; with one it passes, repeatedly.
func TestInviteOnlyJoin(t *testing.T) {
	app := limApp(t, Config{}, limSale(event.Limits{InviteOnly: true}), Deps{})
	inv, _ := tokens.NewInvites(limSecret)
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
		a := limDo(t, app, "POST", "/events/ev/join", map[string]string{"X-User-ID": tc.user, tokens.InviteHeader: tc.tok}, nil)
		if a.status != tc.status || a.code() != tc.code {
			t.Fatalf("join as %s: %d %v, want %d %s", tc.user, a.status, a.body, tc.status, tc.code)
		}
	}
}
