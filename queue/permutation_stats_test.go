package queue

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The statistical tests use fixed seeds, so they are deterministic; their
// bounds sit 4 to 6 standard deviations from what a uniformly random
// permutation gives, so a sound change of algorithm would not trip them but
// an order that keeps arrival time would.

// TestPermutationSpearman checks that position does not follow arrival: the
// Spearman rank correlation of seq and position over W = 100,000 members is
// near 0. For a random permutation its standard deviation is 1/sqrt(W-1),
// about 0.0032, so the bound 0.02 is about 6 of them.
func TestPermutationSpearman(t *testing.T) {
	const w = 100_000
	for add := range byte(3) {
		t.Run(fmt.Sprint("seed+", add), func(t *testing.T) {
			p := permMust(t, permTestSeed(add), w)
			var sumD2 int64
			for x := int64(1); x <= w; x++ {
				pos := p.Apply(x)
				if pos < 1 || pos > w {
					t.Fatalf("Apply(%d) = %d, want in 1..%d", x, pos, w)
				}
				d := pos - x
				sumD2 += d * d
			}
			// seq and position are both ranks 1..W, so no ranking is needed.
			rho := 1 - 6*float64(sumD2)/(float64(w)*(float64(w)*float64(w)-1))
			if math.Abs(rho) >= 0.02 {
				t.Errorf("Spearman rho(seq, position) = %.4f, want |rho| < 0.02", rho)
			}
		})
	}
}

// TestPermutationEarlyArrivalsSpread checks that the first 1% and the last
// 1% of a window of 100,000 land all over the queue: their mean position is
// within 5% of W/2 (the mean of 1,000 uniform positions has a standard
// deviation of W/sqrt(12,000), about 0.9% of W), and their counts in the ten
// deciles of the queue pass a chi-square test (9 degrees of freedom; 30 is
// exceeded with probability 0.0004).
func TestPermutationEarlyArrivalsSpread(t *testing.T) {
	const w, n = 100_000, 1_000
	p := permMust(t, permTestSeed(0), w)
	tests := []struct {
		name  string
		first int64
	}{
		{"first 1%", 1},
		{"last 1%", w - n + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sum int64
			var deciles [10]int
			for x := tt.first; x < tt.first+n; x++ {
				pos := p.Apply(x)
				if pos < 1 || pos > w {
					t.Fatalf("Apply(%d) = %d, want in 1..%d", x, pos, w)
				}
				sum += pos
				deciles[(pos-1)*10/w]++
			}
			mean := float64(sum) / n
			if half := float64(w) / 2; math.Abs(mean-half) > 0.05*half {
				t.Errorf("mean position = %.0f, want within 5%% of %.0f", mean, half)
			}
			chi := 0.0
			for _, c := range deciles {
				d := float64(c) - n/10
				chi += d * d / (n / 10)
			}
			if chi >= 30 {
				t.Errorf("deciles %v: chi-square = %.1f, want < 30", deciles, chi)
			}
		})
	}
}

// TestPermutationFairAcrossSeeds checks that no seq is favoured for any
// position: over 20,000 seeds, how often each seq of a window of 10 gets
// each position is uniform (chi-square over the 10x10 table, 81 degrees of
// freedom, bound 81 + 5 standard deviations). Small windows are where a
// Feistel network mixes worst: with 8 rounds this table is biased by a
// fraction of a percent, detectable from about 400,000 seeds.
func TestPermutationFairAcrossSeeds(t *testing.T) {
	const w, seeds = 10, 20_000
	rng := rand.New(rand.NewPCG(3, 4))
	var counts [w][w]int
	seed := make([]byte, 32)
	for range seeds {
		for i := 0; i < len(seed); i += 8 {
			binary.LittleEndian.PutUint64(seed[i:], rng.Uint64())
		}
		p := permMust(t, seed, w)
		for x := int64(1); x <= w; x++ {
			pos := p.Apply(x)
			if pos < 1 || pos > w {
				t.Fatalf("seed %x: Apply(%d) = %d, want in 1..%d", seed, x, pos, w)
			}
			counts[x-1][pos-1]++
		}
	}
	want := float64(seeds) / w
	chi := 0.0
	for _, row := range counts {
		for _, c := range row {
			d := float64(c) - want
			chi += d * d / want
		}
	}
	const dof = (w - 1) * (w - 1)
	if bound := dof + 5*math.Sqrt(2*dof); chi >= bound {
		t.Errorf("seq x position counts %v: chi-square = %.1f, want < %.1f", counts, chi, bound)
	}
}
