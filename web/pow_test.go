package web

import (
	"github.com/anteroom/anteroom/web/protect"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/event"
)

// TestChallengeAndJoin fetches a challenge through the app, solves it and
// joins; without it, or as another user, join is refused before the
// joiner runs.
func TestChallengeAndJoin(t *testing.T) {
	l := event.Limits{PoW: event.PoW{Enabled: event.SwitchOn, Bits: 10}}
	app := limApp(t, Config{}, limSale(l), Deps{})
	a := limDo(t, app, "GET", "/events/ev/challenge", map[string]string{"X-User-ID": "alice"}, nil)
	ch, _ := a.body["challenge"].(string)
	if a.status != 200 || a.body["required"] != true || a.body["bits"] != 10.0 || ch == "" {
		t.Fatalf("challenge: %d %v", a.status, a.body)
	}
	solved := ch + ":" + protect.SolvePoW(ch, 10)
	for _, tc := range []struct {
		user, pow string
		status    int
		code      string
	}{
		{"alice", "", 403, "pow_required"},
		{"mallory", solved, 403, "pow_required"},
		{"alice", solved, 200, ""},
		{"alice", solved, 200, ""}, // the same user again: harmless, join is idempotent
	} {
		a := limDo(t, app, "POST", "/events/ev/join", map[string]string{"X-User-ID": tc.user, protect.PoWHeader: tc.pow}, nil)
		if a.status != tc.status || a.code() != tc.code {
			t.Fatalf("join as %s with %q: %d %v, want %d %s", tc.user, tc.pow, a.status, a.body, tc.status, tc.code)
		}
	}
	off := limApp(t, Config{}, limSale(event.Limits{}), Deps{})
	if a := limDo(t, off, "GET", "/events/ev/challenge", nil, nil); a.status != 200 || a.body["required"] != false {
		t.Fatalf("challenge of an event without proof of work: %d %v", a.status, a.body)
	}
	if a := limDo(t, off, "GET", "/assets/pow.js", nil, nil); a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("pow.js: %d %v", a.status, a.header)
	}
}
