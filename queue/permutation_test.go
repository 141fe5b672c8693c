package queue

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// permTestSeed returns the 32 bytes 0x00, 0x01, ..., 0x1f plus add.
func permTestSeed(add byte) []byte {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i) + add
	}
	return seed
}

// permMust returns NewPermutation(seed, w) or stops the test.
func permMust(t testing.TB, seed []byte, w int64) Permutation {
	t.Helper()
	p, err := NewPermutation(seed, w)
	if err != nil {
		t.Fatalf("NewPermutation(seed, %d): %v", w, err)
	}
	return p
}

// permCheckBijection checks that Apply maps 1..W onto 1..W exactly once
// each and that Inverse undoes it. It stops at the first failure.
func permCheckBijection(t *testing.T, p Permutation) {
	t.Helper()
	w := p.Size()
	seen := make([]bool, w+1)
	for x := int64(1); x <= w; x++ {
		y := p.Apply(x)
		if y < 1 || y > w {
			t.Fatalf("W=%d: Apply(%d) = %d, want in 1..%d", w, x, y, w)
		}
		if seen[y] {
			t.Fatalf("W=%d: Apply(%d) = %d, a position already given", w, x, y)
		}
		seen[y] = true
		if got := p.Inverse(y); got != x {
			t.Fatalf("W=%d: Inverse(Apply(%d) = %d) = %d, want %d", w, x, y, got, x)
		}
	}
}

func TestNewPermutation(t *testing.T) {
	tests := []struct {
		name    string
		seed    []byte
		w       int64
		wantErr bool
	}{
		{"one", permTestSeed(0), 1, false},
		{"event seed", permTestSeed(0), 1_000_000, false},
		{"largest", permTestSeed(0), math.MaxInt64, false},
		{"one-byte seed", []byte{7}, 10, false},
		{"zero size", permTestSeed(0), 0, true},
		{"negative size", permTestSeed(0), -5, true},
		{"smallest int64", permTestSeed(0), math.MinInt64, true},
		{"empty seed", []byte{}, 10, true},
		{"nil seed", nil, 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPermutation(tt.seed, tt.w)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewPermutation(%d bytes, %d) error = %v, want error %t", len(tt.seed), tt.w, err, tt.wantErr)
			}
			want := tt.w
			if tt.wantErr {
				want = 0
			}
			if got := p.Size(); got != want {
				t.Errorf("Size() = %d, want %d", got, want)
			}
		})
	}
}

func TestPermutationZeroValue(t *testing.T) {
	var p Permutation
	if got := p.Size(); got != 0 {
		t.Errorf("Size() = %d, want 0", got)
	}
	for _, x := range []int64{-1, 0, 1, 2, math.MaxInt64} {
		if got := p.Apply(x); got != 0 {
			t.Errorf("Apply(%d) = %d, want 0", x, got)
		}
		if got := p.Inverse(x); got != 0 {
			t.Errorf("Inverse(%d) = %d, want 0", x, got)
		}
	}
}

func TestPermutationOutOfRange(t *testing.T) {
	p := permMust(t, permTestSeed(0), 1000)
	for _, x := range []int64{math.MinInt64, -1, 0, 1001, 1 << 40, math.MaxInt64} {
		if got := p.Apply(x); got != 0 {
			t.Errorf("Apply(%d) = %d, want 0", x, got)
		}
		if got := p.Inverse(x); got != 0 {
			t.Errorf("Inverse(%d) = %d, want 0", x, got)
		}
	}
}

// TestPermutationBijectionSmall checks every window size up to 2,000, which
// covers half widths k = 1..6 and every ratio 2^(2k)/W of cycle walking.
func TestPermutationBijectionSmall(t *testing.T) {
	seed := permTestSeed(0)
	// Four interleaved parts of similar cost, run in parallel.
	for part := range int64(4) {
		t.Run(fmt.Sprint("part", part), func(t *testing.T) {
			t.Parallel()
			for w := 1 + part; w <= 2000; w += 4 {
				permCheckBijection(t, permMust(t, seed, w))
			}
		})
	}
}

// TestPermutationBijectionLarge checks sizes just above and at powers of 4
// (longest and shortest walks) and one near the 200,000 mark.
func TestPermutationBijectionLarge(t *testing.T) {
	for _, w := range []int64{65_537, 200_000, 262_144} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			permCheckBijection(t, permMust(t, permTestSeed(1), w))
		})
	}
}

// TestPermutationSampled checks Inverse and range for sampled members of 20
// random window sizes up to 10^7, and of sizes up to the int64 limit.
func TestPermutationSampled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int64{math.MaxInt64, 1 << 62, 1<<62 + 1, 1<<32 + 1}
	for range 20 {
		sizes = append(sizes, 1+rng.Int64N(10_000_000))
	}
	for _, w := range sizes {
		p := permMust(t, permTestSeed(2), w)
		for range 10_000 {
			x := 1 + rng.Int64N(w)
			y := p.Apply(x)
			if y < 1 || y > w {
				t.Fatalf("W=%d: Apply(%d) = %d, want in 1..%d", w, x, y, w)
			}
			if got := p.Inverse(y); got != x {
				t.Fatalf("W=%d: Inverse(Apply(%d) = %d) = %d, want %d", w, x, y, got, x)
			}
		}
	}
}

// TestPermutationSeedsDiffer checks that seeds differing in one bit, one
// byte or their length give unrelated orders: two independent random
// permutations of 1000 agree on about 1 position.
func TestPermutationSeedsDiffer(t *testing.T) {
	const w = 1000
	base := permMust(t, permTestSeed(0), w)
	flipped := permTestSeed(0)
	flipped[31] ^= 1
	tests := []struct {
		name string
		seed []byte
	}{
		{"last bit flipped", flipped},
		{"every byte +1", permTestSeed(1)},
		{"first 16 bytes", permTestSeed(0)[:16]},
		{"33 bytes", append(permTestSeed(0), 0x20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := permMust(t, tt.seed, w)
			same := 0
			for x := int64(1); x <= w; x++ {
				if base.Apply(x) == other.Apply(x) {
					same++
				}
			}
			if same >= w/20 {
				t.Errorf("orders agree on %d of %d positions, want fewer than %d", same, w, w/20)
			}
		})
	}
}

func TestPermutationStringHidesKeys(t *testing.T) {
	p := permMust(t, permTestSeed(0), 42)
	want := "queue.Permutation{W: 42}"
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		got := fmt.Sprintf(verb, p)
		if got != want {
			t.Errorf("Sprintf(%q) = %q, want %q", verb, got, want)
		}
	}
	key := fmt.Sprint(p.keys[0][0])
	if s := fmt.Sprintf("%v %+v %#v", p, p, p); strings.Contains(s, key) {
		t.Errorf("formatted Permutation %q contains round key %s", s, key)
	}
}

// FuzzPermutation checks that any seed, size and input give a result in
// range that Inverse undoes, without panics.
func FuzzPermutation(f *testing.F) {
	f.Add(permTestSeed(0), int64(10), int64(3))
	f.Add([]byte{1}, int64(1), int64(1))
	f.Add([]byte("seed"), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add([]byte{}, int64(5), int64(2))
	f.Add(permTestSeed(9), int64(0), int64(0))
	f.Add(permTestSeed(9), int64(1000), int64(-7))
	f.Fuzz(func(t *testing.T, seed []byte, w, x int64) {
		p, err := NewPermutation(seed, w)
		if bad := w < 1 || len(seed) == 0; bad != (err != nil) {
			t.Fatalf("NewPermutation(%d bytes, %d) error = %v, want error %t", len(seed), w, err, bad)
		}
		y, back := p.Apply(x), p.Inverse(x)
		if x < 1 || x > p.Size() {
			if y != 0 || back != 0 {
				t.Fatalf("W=%d: Apply(%d), Inverse(%d) = %d, %d, want 0, 0", p.Size(), x, x, y, back)
			}
			return
		}
		if y < 1 || y > w || back < 1 || back > w {
			t.Fatalf("W=%d: Apply(%d), Inverse(%d) = %d, %d, want both in 1..%d", w, x, x, y, back, w)
		}
		if got := p.Inverse(y); got != x {
			t.Fatalf("W=%d: Inverse(Apply(%d) = %d) = %d, want %d", w, x, y, got, x)
		}
		if got := p.Apply(back); got != x {
			t.Fatalf("W=%d: Apply(Inverse(%d) = %d) = %d, want %d", w, x, back, got, x)
		}
	})
}

func BenchmarkApply(b *testing.B) {
	for _, w := range []int64{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("W=%d", w), func(b *testing.B) {
			p := permMust(b, permTestSeed(0), w)
			x := int64(0)
			for b.Loop() {
				x = x%w + 1
				p.Apply(x)
			}
		})
	}
}

func BenchmarkNewPermutation(b *testing.B) {
	seed := permTestSeed(0)
	for b.Loop() {
		if _, err := NewPermutation(seed, 10_000_000); err != nil {
			b.Fatal(err)
		}
	}
}
