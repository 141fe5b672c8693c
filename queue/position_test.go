package queue

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestPosition(t *testing.T) {
	p := permMust(t, permTestSeed(0), 10)
	tests := []struct {
		name string
		p    Permutation
		seq  int64
		want int64
	}{
		{"no window keeps seq", Permutation{}, 7, 7},
		{"no window, first", Permutation{}, 1, 1},
		{"no window, zero seq", Permutation{}, 0, 0},
		{"first member", p, 1, 3},
		{"member", p, 4, 1},
		{"last member", p, 10, 5},
		{"first later joiner", p, 11, 11},
		{"later joiner", p, 1_000_000, 1_000_000},
		{"largest seq", p, math.MaxInt64, math.MaxInt64},
		{"zero seq", p, 0, 0},
		{"negative seq", p, -3, 0},
		{"smallest int64", p, math.MinInt64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Position(tt.p, tt.seq); got != tt.want {
				t.Errorf("Position(%v, %d) = %d, want %d", tt.p, tt.seq, got, tt.want)
			}
		})
	}
}

// TestPositionCoversQueue checks that window members and later joiners
// together fill positions 1..N exactly once.
func TestPositionCoversQueue(t *testing.T) {
	const w, joined = 500, 800
	p := permMust(t, permTestSeed(5), w)
	seen := make([]bool, joined+1)
	for seq := int64(1); seq <= joined; seq++ {
		pos := Position(p, seq)
		if pos < 1 || pos > joined || seen[pos] {
			t.Fatalf("Position(W=%d, %d) = %d: out of 1..%d or already given", w, seq, pos, joined)
		}
		seen[pos] = true
	}
}

func TestParseSeedHex(t *testing.T) {
	const valid = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	tests := []struct {
		name    string
		in      string
		want    []byte
		wantErr string
	}{
		{"valid", valid, permTestSeed(0), ""},
		{"all zero", strings.Repeat("0", 64), make([]byte, 32), ""},
		{"all ff", strings.Repeat("f", 64), bytes.Repeat([]byte{0xff}, 32), ""},
		{"empty", "", nil, "is 0 hex characters, want 64"},
		{"31 bytes", valid[:62], nil, "is 62 hex characters, want 64"},
		{"odd length", valid[:63], nil, "is 63 hex characters, want 64"},
		{"33 bytes", valid + "20", nil, "is 66 hex characters, want 64"},
		{"uppercase", strings.ToUpper(valid), nil, "character 22 is not lowercase hex"},
		{"not hex", "g" + valid[1:], nil, "character 1 is not lowercase hex"},
		{"space", valid[:63] + " ", nil, "character 64 is not lowercase hex"},
		{"0x prefix", "0x" + valid[2:], nil, "character 2 is not lowercase hex"},
		{"multibyte rune", "é" + valid[2:], nil, "character 1 is not lowercase hex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSeedHex(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSeedHex(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("ParseSeedHex(%q) = %x, want nil", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSeedHex(%q) error = %v, want nil", tt.in, err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("ParseSeedHex(%q) = %x, want %x", tt.in, got, tt.want)
			}
		})
	}
}

// TestParseSeedHexHidesInput checks that errors never echo the seed, which
// is secret until the window closes.
func TestParseSeedHexHidesInput(t *testing.T) {
	secret := strings.Repeat("ab", 31) + "ZZ"
	_, err := ParseSeedHex(secret)
	if err == nil {
		t.Fatalf("ParseSeedHex(%q) error = nil, want an error", secret)
	}
	if strings.Contains(err.Error(), "abab") {
		t.Errorf("ParseSeedHex error %q quotes its input", err)
	}
}

func TestCommitment(t *testing.T) {
	tests := []struct {
		name string
		seed []byte
		want string
	}{
		// sha256sum of the 32 bytes 00..1f and of nothing.
		{"seed 00..1f", permTestSeed(0), "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"},
		{"empty", nil, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Commitment(tt.seed); got != tt.want {
				t.Errorf("Commitment(%x) = %s, want %s", tt.seed, got, tt.want)
			}
		})
	}
}

// TestCommitmentOfParsedSeed checks the verifier's path: the commitment of
// the revealed hex seed is the hash of its bytes, not of its text.
func TestCommitmentOfParsedSeed(t *testing.T) {
	const hexSeed = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	seed, err := ParseSeedHex(hexSeed)
	if err != nil {
		t.Fatalf("ParseSeedHex: %v", err)
	}
	got := Commitment(seed)
	if want := Commitment(permTestSeed(0)); got != want {
		t.Errorf("Commitment(ParseSeedHex(seed)) = %s, want %s", got, want)
	}
	if textHash := Commitment([]byte(hexSeed)); got == textHash {
		t.Errorf("Commitment hashed the hex text, want the bytes")
	}
}
