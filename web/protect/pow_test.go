package protect

import (
	"bytes"
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPoWVerify(t *testing.T) {
	k := newPoWKey(limSecret)
	now := time.Unix(1_800_000_000, 0)
	ch := k.issue("ev", "alice", 8, now.Add(time.Minute))
	good := ch + ":" + SolvePoW(ch, 8)
	other := newPoWKey(make([]byte, 32)).issue("ev", "alice", 8, now.Add(time.Minute))
	cases := []struct {
		name, header, ev, user string
		minBits                int
		at                     time.Time
		want                   string // substring of the detail, "" for valid
	}{
		{"valid", good, "ev", "alice", 8, now, ""},
		{"easier now", good, "ev", "alice", 4, now, ""},
		{"missing", "", "ev", "alice", 8, now, "asks for a proof of work"},
		{"other user", good, "ev", "bob", 8, now, "another event or user"},
		{"other event", good, "ev2", "alice", 8, now, "another event or user"},
		{"other key", other + ":" + SolvePoW(other, 8), "ev", "alice", 8, now, "another event or user"},
		{"expired", good, "ev", "alice", 8, now.Add(time.Minute), "expired"},
		{"harder now", good, "ev", "alice", 9, now, "easier"},
		{"wrong nonce", ch + ":x" + SolvePoW(ch, 8), "ev", "alice", 8, now, "does not solve"},
		{"no nonce", ch, "ev", "alice", 8, now, "malformed"},
		{"bad nonce", ch + ":1 2", "ev", "alice", 8, now, "malformed"},
		{"long", ch + ":" + strings.Repeat("1", 300), "ev", "alice", 8, now, "malformed"},
		{"tampered bits", strings.Replace(ch, ".8.", ".1.", 1) + ":0", "ev", "alice", 8, now, "another event or user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := k.verify(tc.header, tc.ev, tc.user, tc.minBits, tc.at)
			switch {
			case tc.want == "" && p != nil:
				t.Fatalf("got %v, want valid", p)
			case tc.want != "" && (p == nil || p.Status != 403 || p.Code != "pow_required" || !strings.Contains(p.Detail, tc.want)):
				t.Fatalf("got %v, want 403 pow_required mentioning %q", p, tc.want)
			}
		})
	}
}

func TestLeadingZeroBits(t *testing.T) {
	cases := []struct {
		sum  [32]byte
		want int
	}{
		{[32]byte{0x80}, 0}, {[32]byte{0x01}, 7}, {[32]byte{0, 0x40}, 9}, {[32]byte{}, 256},
	}
	for _, tc := range cases {
		if got := leadingZeroBits(tc.sum); got != tc.want {
			t.Errorf("%x: got %d, want %d", tc.sum[:2], got, tc.want)
		}
	}
	ch := "p1.ev.1.12.abcd.mac"
	n := SolvePoW(ch, 12)
	if leadingZeroBits(sha256.Sum256([]byte(ch+n))) < 12 {
		t.Fatalf("SolvePoW's nonce %s does not solve", n)
	}
}

// BenchmarkPoWVerify is the server's cost of one join's proof of work.
func BenchmarkPoWVerify(b *testing.B) {
	k := newPoWKey(limSecret)
	now := time.Now()
	ch := k.issue("ev", "alice", 16, now.Add(time.Minute))
	h := ch + ":" + SolvePoW(ch, 16)
	b.ReportAllocs()
	for b.Loop() {
		if p := k.verify(h, "ev", "alice", 16, now); p != nil {
			b.Fatal(p)
		}
	}
}

// BenchmarkPoWSolve is the Go equivalent of the browser's solver: one
// solve per iteration at each difficulty, 2^bits hashes on average.
func BenchmarkPoWSolve(b *testing.B) {
	k := newPoWKey(limSecret)
	for _, bits := range []int{12, 16, 18} {
		b.Run(strconv.Itoa(bits)+"bits", func(b *testing.B) {
			for b.Loop() {
				SolvePoW(k.issue("ev", "alice", bits, time.Now().Add(time.Minute)), bits)
			}
		})
	}
}

// limSecret is the edge secret of these tests (web's limits tests use the
// same bytes).
var limSecret = bytes.Repeat([]byte{9}, 32)
