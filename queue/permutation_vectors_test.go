package queue

import (
	"math"
	"testing"
)

// TestPermutationKnownAnswers pins π for the seed 000102...1f so the
// algorithm, which anyone may re-implement to verify a position, cannot
// change silently. The values were also computed by an independent Python
// implementation written from the Permutation doc comment alone.
func TestPermutationKnownAnswers(t *testing.T) {
	tests := []struct {
		w, seq, want int64
	}{
		{1, 1, 1},
		{2, 1, 1},
		{2, 2, 2},
		{3, 1, 3},
		{3, 2, 2},
		{3, 3, 1},
		{10, 1, 3},
		{10, 2, 8},
		{10, 3, 7},
		{10, 4, 1},
		{10, 5, 2},
		{10, 6, 10},
		{10, 7, 9},
		{10, 8, 6},
		{10, 9, 4},
		{10, 10, 5},
		{1_000_000, 1, 637869},
		{1_000_000, 2, 254795},
		{1_000_000, 6, 17928},
		{1_000_000, 12345, 154684},
		{1_000_000, 1_000_000, 44964},
		{1 << 62, 1, 376735327384238353},
		{1 << 62, 12345, 19615549165750205},
		{math.MaxInt64, 1, 1683485429476893114},
		{math.MaxInt64, math.MaxInt64, 7103147739397473008},
	}
	seed := permTestSeed(0)
	for _, tt := range tests {
		p := permMust(t, seed, tt.w)
		if got := p.Apply(tt.seq); got != tt.want {
			t.Errorf("W=%d: Apply(%d) = %d, want %d", tt.w, tt.seq, got, tt.want)
		}
		if got := p.Inverse(tt.want); got != tt.seq {
			t.Errorf("W=%d: Inverse(%d) = %d, want %d", tt.w, tt.want, got, tt.seq)
		}
	}
}

// TestPermSipHash checks the round function against the SipHash-2-4 paper's
// test vector for an 8-byte message: key 00 01 .. 0f, message 00 01 .. 07.
func TestPermSipHash(t *testing.T) {
	const k0, k1 = 0x0706050403020100, 0x0f0e0d0c0b0a0908
	// The message bytes 00 01 .. 07 are the big-endian encoding of h.
	const h = 0x0001020304050607
	if got, want := permSipHash(k0, k1, h), uint64(0x93f5f5799a932462); got != want {
		t.Errorf("permSipHash(paper key, 00..07) = %#x, want %#x", got, want)
	}
}
