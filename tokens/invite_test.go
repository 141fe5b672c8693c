package tokens

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestInvites(t *testing.T) {
	if _, err := NewInvites(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte secret was accepted")
	}
	inv, _ := NewInvites(bytes.Repeat([]byte{9}, 32))
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
		{"newline in the signature", tok[:20] + "\n" + tok[20:], "ev", "alice", now, false}, // found by FuzzInviteVerifyLane
	}
	for _, tc := range cases {
		if err := inv.Verify(tc.tok, tc.ev, tc.user, tc.at); (err == nil) != tc.ok {
			t.Errorf("%s: got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestInviteErrorIsInvalid: an invite failure is one of the package's
// verification failures, as the package's invariant says.
func TestInviteErrorIsInvalid(t *testing.T) {
	inv, _ := NewInvites(bytes.Repeat([]byte{9}, 32))
	if err := inv.Verify("garbage", "ev", "alice", time.Now()); !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrInviteInvalid) {
		t.Fatalf("got %v, want ErrInviteInvalid wrapping ErrInvalid", err)
	}
}

// TestLaneInvites: a lane invite names its lane, which nobody can change,
// and is bound to its user and event like a plain one.
func TestLaneInvites(t *testing.T) {
	inv, _ := NewInvites(bytes.Repeat([]byte{9}, 32))
	now := time.Unix(1_800_000_000, 0)
	tok := inv.SignLane("ev", "alice", "members", now.Add(time.Hour))
	if lane, err := inv.VerifyLane(tok, "ev", "alice", now); err != nil || lane != "members" {
		t.Fatalf("got %q %v, want members", lane, err)
	}
	if err := inv.Verify(tok, "ev", "alice", now); err != nil {
		t.Fatalf("a lane invite is an invite: %v", err)
	}
	if lane, err := inv.VerifyLane(inv.Sign("ev", "alice", now.Add(time.Hour)), "ev", "alice", now); err != nil || lane != "" {
		t.Fatalf("plain invite: got %q %v", lane, err)
	}
	moved := "inv2.1800003600.partner." + tok[len("inv2.1800003600.members."):]
	for name, bad := range map[string]string{"another lane": moved, "empty lane": "inv2.1800003600.." + tok[len("inv2.1800003600.members."):]} {
		if _, err := inv.VerifyLane(bad, "ev", "alice", now); !errors.Is(err, ErrInviteInvalid) {
			t.Errorf("%s: got %v, want ErrInviteInvalid", name, err)
		}
	}
	for _, who := range [][2]string{{"ev", "bob"}, {"ev2", "alice"}} {
		if _, err := inv.VerifyLane(tok, who[0], who[1], now); err == nil {
			t.Errorf("the invite also admits %v", who)
		}
	}
	if _, err := inv.VerifyLane(tok, "ev", "alice", now.Add(time.Hour)); err == nil {
		t.Error("an expired lane invite was accepted")
	}
}

// FuzzInviteVerifyLane: no input makes VerifyLane panic or accept an
// invite it did not sign.
func FuzzInviteVerifyLane(f *testing.F) {
	inv, _ := NewInvites(bytes.Repeat([]byte{9}, 32))
	exp := time.Unix(1_900_000_000, 0)
	lane := inv.SignLane("ev", "alice", "members", exp)
	plain := inv.Sign("ev", "alice", exp)
	f.Add(lane)
	f.Add(plain)
	f.Add("inv2.1.a.b")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := inv.VerifyLane(s, "ev", "alice", time.Unix(1_800_000_000, 0))
		if err == nil && s != lane && s != plain && inv.SignLane("ev", "alice", got, exp) != s {
			// Another expiry is fine only if it is what SignLane makes of it.
			e := strings.Split(strings.TrimPrefix(strings.TrimPrefix(s, "inv1."), "inv2."), ".")[0]
			n, _ := strconv.ParseInt(e, 10, 64)
			if inv.SignLane("ev", "alice", got, time.Unix(n, 0)) != s {
				t.Fatalf("accepted %q (lane %q), which SignLane does not make", s, got)
			}
		}
	})
}
