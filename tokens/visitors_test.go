package tokens

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestVisitorsRoundTrip(t *testing.T) {
	v, err := NewVisitors(testSecret(1))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 100 {
		id, cookie, err := v.New()
		if err != nil {
			t.Fatal(err)
		}
		if raw, err := unb64(id); err != nil || len(raw) != 16 {
			t.Fatalf("id %q: got %d bytes (%v), want 16 bytes of base64url", id, len(raw), err)
		}
		if !strings.HasPrefix(cookie, id+".") || len(cookie) != visitorCookieLen {
			t.Fatalf("cookie %q: want id + \".\" + 22-character MAC", cookie)
		}
		if seen[id] {
			t.Fatalf("id %s: got it twice, want fresh random ids", id)
		}
		seen[id] = true
		got, err := v.Verify(cookie)
		if err != nil || got != id {
			t.Fatalf("Verify(%q): got %q, %v, want %q", cookie, got, err, id)
		}
	}
}

func TestVisitorsRejectTampering(t *testing.T) {
	v, _ := NewVisitors(testSecret(1))
	other, _ := NewVisitors(testSecret(2))
	id, cookie, err := v.New()
	if err != nil {
		t.Fatal(err)
	}
	_, foreign, _ := other.New()
	_, second, _ := v.New()
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	mac := cookie[len(id)+1:]
	// The last character of a 16-byte base64url value carries 4 unused bits;
	// a different last character with the same 2 leading bits decodes to the
	// same bytes unless decoding is strict.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, mac[len(mac)-1])
	sloppy := cookie[:len(cookie)-1] + string(alphabet[last^1])
	if b, err := base64.RawURLEncoding.DecodeString(sloppy[len(id)+1:]); err != nil || b64(b) != mac {
		t.Fatalf("test setup: %q should decode leniently to the same MAC", sloppy)
	}
	for _, tc := range []struct{ name, cookie string }{
		{"id changed", flip(cookie, 0)},
		{"MAC changed", flip(cookie, len(cookie)-3)},
		{"another secret", foreign},
		{"id of one, MAC of another", id + second[len(id):]},
		{"non-canonical MAC encoding", sloppy},
		{"missing MAC", id},
		{"missing dot", id + mac},
		{"extra dot", id + ".." + mac[1:]},
		{"dot moved", id[:21] + "." + id[21:] + mac[1:]},
		{"padding", id + "." + mac[:21] + "="},
		{"too long", cookie + "A"},
		{"empty", ""},
		{"spaces", strings.Repeat(" ", visitorCookieLen)},
	} {
		got, err := v.Verify(tc.cookie)
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, err, ErrInvalid)
			if got != "" {
				t.Errorf("id: got %q, want \"\"", got)
			}
		})
	}
	if _, err := NewVisitors(make([]byte, MinSecretLen-1)); err == nil {
		t.Errorf("NewVisitors(31 bytes): got no error, want one")
	}
}
