package tokens

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestPasses: a pass verifies for its event until it expires, and nothing
// else does: another event, another deployment, a changed field, garbage.
func TestPasses(t *testing.T) {
	if _, err := NewPasses(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte secret was accepted")
	}
	p, _ := NewPasses(bytes.Repeat([]byte{9}, 32))
	other, _ := NewPasses(make([]byte, 32))
	now := time.Unix(1_800_000_000, 0)
	ps := Pass{ID: "0123456789abcdef", Event: "ev", ExpiresAt: now.Add(time.Hour), Uses: 2}
	tok, err := p.Sign(ps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sign(Pass{ID: "xyz", Event: "ev"}); err == nil {
		t.Fatal("a malformed id was signed")
	}
	foreign, _ := other.Sign(ps)
	cases := []struct {
		name, tok, ev string
		at            time.Time
		ok, expired   bool
	}{
		{"valid", tok, "ev", now, true, false},
		{"another event", tok, "ev2", now, false, false},
		{"expired", tok, "ev", now.Add(time.Hour), false, true},
		{"another deployment", foreign, "ev", now, false, false},
		{"uses raised", "ps1.0123456789abcdef.1800003600.9." + tok[len("ps1.0123456789abcdef.1800003600.2."):], "ev", now, false, false},
		{"leading zero", "ps1.0123456789abcdef.01800003600.2." + tok[len("ps1.0123456789abcdef.1800003600.2."):], "ev", now, false, false},
		{"empty", "", "ev", now, false, false},
		{"garbage", "ps1.a.b.c.d", "ev", now, false, false},
		{"newline in the signature", tok[:40] + "\r\n" + tok[40:], "ev", now, false, false},
	}
	for _, tc := range cases {
		got, expired, err := p.Verify(tc.tok, tc.ev, tc.at)
		if (err == nil) != tc.ok || expired != tc.expired {
			t.Errorf("%s: got %v expired=%v, want ok=%v expired=%v", tc.name, err, expired, tc.ok, tc.expired)
		}
		if err != nil && (!errors.Is(err, ErrPassInvalid) || !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: got %v, want ErrPassInvalid wrapping ErrInvalid", tc.name, err)
		}
		if tc.ok && got != ps {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, ps)
		}
	}
}

// FuzzPassVerify: no input makes Verify panic or accept a pass it did not sign.
func FuzzPassVerify(f *testing.F) {
	p, _ := NewPasses(bytes.Repeat([]byte{9}, 32))
	tok, _ := p.Sign(Pass{ID: "0123456789abcdef", Event: "ev", ExpiresAt: time.Unix(1_900_000_000, 0), Uses: 1})
	f.Add(tok)
	f.Add("ps1.0123456789abcdef.1.1.x")
	f.Fuzz(func(t *testing.T, s string) {
		ps, _, err := p.Verify(s, "ev", time.Unix(1_800_000_000, 0))
		if err == nil && s != tok {
			if again, _ := p.Sign(ps); again != s {
				t.Fatalf("accepted %q, which is not what Sign makes of %+v", s, ps)
			}
		}
	})
}
