package turnstile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
)

// TestAuthorize walks the rules of spending an admission in their order,
// with real tokens: the first refusal wins, and the caller is asked only
// once the token verifies.
func TestAuthorize(t *testing.T) {
	iss := newIssuer(t)
	other := newIssuer(t) // another key set: a forgery as far as iss knows
	ts := turnstile.New(iss, &fakeView{}, nil)
	mint := func(i *tokens.Issuer, ev, user string) string {
		t.Helper()
		tok, _, err := i.Issue(ev, user, 7, 2*time.Minute, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := mint(iss, "drop", "alice")
	noIdentity := errors.New("no identity")
	sale := event.Config{ID: "drop"}
	room := event.Config{ID: "drop", Mode: event.SafetyNet}
	paused := event.Config{ID: "drop", Paused: true}
	for _, tc := range []struct {
		name     string
		cfg      event.Config
		raw      string
		caller   string
		callErr  error
		now      time.Time
		want     error // nil: authorized
		asksWhom bool  // the caller is asked
	}{
		{"authorized", sale, good, "alice", nil, at.Add(time.Minute), nil, true},
		{"a safety-net room sells nothing", room, good, "alice", nil, at, turnstile.ErrNotForSale, false},
		{"no token", sale, "", "alice", nil, at, turnstile.ErrNoToken, false},
		{"no token in a room", room, "", "alice", nil, at, turnstile.ErrNotForSale, false},
		{"garbage", sale, "not.a.token", "alice", nil, at, tokens.ErrInvalid, false},
		{"forged", sale, mint(other, "drop", "alice"), "alice", nil, at, tokens.ErrInvalid, false},
		{"tampered", sale, tamper(good), "alice", nil, at, tokens.ErrInvalid, false},
		{"expired", sale, good, "alice", nil, at.Add(3 * time.Minute), tokens.ErrInvalid, false},
		{"another event", sale, mint(iss, "other", "alice"), "alice", nil, at, tokens.ErrWrongEvent, false},
		{"forged, and nobody", sale, mint(other, "drop", "alice"), "", noIdentity, at, tokens.ErrInvalid, false},
		{"nobody", sale, good, "", noIdentity, at, noIdentity, true},
		{"another user", sale, good, "mallory", nil, at, turnstile.ErrOtherUser, true},
		{"paused", paused, good, "alice", nil, at, turnstile.ErrPaused, true},
		{"paused, another user", paused, good, "mallory", nil, at, turnstile.ErrOtherUser, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			caller := func() (string, error) { asked = true; return tc.caller, tc.callErr }
			a, err := ts.Authorize(&tc.cfg, tc.raw, caller, tc.now)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Authorize = %v, want %v", err, tc.want)
			}
			if asked != tc.asksWhom {
				t.Errorf("caller asked = %v, want %v", asked, tc.asksWhom)
			}
			if err == nil && (a.User != "alice" || a.Event != "drop" || a.Pos != 7) {
				t.Errorf("Authorize = %+v, want alice's admission to drop at 7", a)
			}
			if err != nil && a != (tokens.Admission{}) {
				t.Errorf("a refusal returned claims %+v", a)
			}
		})
	}
}

// tamper changes the first character of tok's signature.
func tamper(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 1
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// TestVerify: the gate's check is signature, lifetime and event only; it
// asks no caller and ignores pause and mode.
func TestVerify(t *testing.T) {
	iss := newIssuer(t)
	ts := turnstile.New(iss, &fakeView{}, nil)
	tok, want, err := iss.Issue("room", "g-visitor", 3, time.Minute, at)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ts.Verify(tok, "room", at); err != nil || got != want {
		t.Errorf("Verify = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ts.Verify(tok, "drop", at); !errors.Is(err, tokens.ErrWrongEvent) {
		t.Errorf("Verify for another event = %v, want ErrWrongEvent", err)
	}
	if _, err := ts.Verify(tok, "room", at.Add(2*time.Minute)); !errors.Is(err, tokens.ErrInvalid) {
		t.Errorf("Verify expired = %v, want ErrInvalid", err)
	}
}

// TestSpent: a granted claim marks its admission's position claimed, with
// the time since the token was issued; a pass's position goes to the view
// as is (the view drops positions of no lane).
func TestSpent(t *testing.T) {
	view := &fakeView{}
	iss := newIssuer(t)
	ts := turnstile.New(iss, view, nil)
	cfg := &event.Config{ID: "drop", AdmissionTTLSeconds: 300}
	_, q, err := ts.Admit(context.Background(), cfg, turnstile.Entry{Kind: turnstile.Queue, User: "alice", Pos: 12}, at)
	if err != nil {
		t.Fatal(err)
	}
	_, p, err := ts.Admit(context.Background(), cfg, turnstile.Entry{Kind: turnstile.Pass, User: "vip"}, at)
	if err != nil {
		t.Fatal(err)
	}
	view.marks = nil
	ts.Spent(q, at.Add(40*time.Second))
	ts.Spent(p, at.Add(time.Second))
	want := []mark{
		{call: "claimed", ev: "drop", pos: 12, waited: 40 * time.Second},
		{call: "claimed", ev: "drop", pos: admission.PassPosition, waited: time.Second},
	}
	if !slices.Equal(view.marks, want) {
		t.Errorf("view got %+v, want %+v", view.marks, want)
	}
}
