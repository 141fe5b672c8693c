package admission_test

import (
	"hash/fnv"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
)

// TestETA walks the ETA rule through its inputs, one named case a row,
// like TestStepFor: the configured rate before a measurement, the
// measured rate (never above the configured one), the no-show share
// (never above MaxNoShowShare) and the degenerate inputs. Every row also
// checks the bound: the ETA is never shorter than the frontier needs at
// its configured rate and the measured no-show share.
func TestETA(t *testing.T) {
	const sec = time.Second
	tests := []struct {
		name    string
		ahead   int64
		pace    admission.Pace
		maxRate float64
		want    time.Duration
	}{
		{"nothing measured: the configured rate", 99, admission.Pace{}, 10, 10 * sec},
		{"next in line", 0, admission.Pace{}, 4, sec / 4},
		{"measured slower than configured", 99, admission.Pace{Paid: 5, Rated: true}, 10, 20 * sec},
		{"measured faster: capped at the configured rate", 99, admission.Pace{Paid: 40, Rated: true}, 10, 10 * sec},
		{"Paid without Rated is not a measurement", 99, admission.Pace{Paid: 5}, 10, 10 * sec},
		{"half no-shows: half the positions are skipped", 99, admission.Pace{NoShowShare: 0.5}, 10, 5 * sec},
		{"no-shows and a measured rate", 199, admission.Pace{Paid: 5, Rated: true, NoShowShare: 0.25}, 10, 30 * sec},
		{"no-shows at most MaxNoShowShare", 99, admission.Pace{NoShowShare: 1}, 10, sec},
		{"a negative share is none", 99, admission.Pace{NoShowShare: -0.5}, 10, 10 * sec},
		{"a NaN share is none", 99, admission.Pace{NoShowShare: math.NaN()}, 10, 10 * sec},
		{"standing still: a hundredth of the rate", 9, admission.Pace{Paid: 0, Rated: true}, 10, 100 * sec},
		{"a NaN rate is no measurement", 99, admission.Pace{Paid: math.NaN(), Rated: true}, 10, 10 * sec},
		{"no rate, no estimate", 99, admission.Pace{}, 0, 0},
		{"a negative ahead has no estimate", -1, admission.Pace{}, 10, 0},
		{"a queue longer than time: bounded, not overflowed", math.MaxInt64 - 1, admission.Pace{}, 1e-300, time.Duration(math.MaxInt64 / 2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := admission.ETA(tc.ahead, tc.pace, tc.maxRate)
			if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("ETA(%d, %+v, %v) = %v, want %v", tc.ahead, tc.pace, tc.maxRate, got, tc.want)
			}
			if tc.maxRate > 0 && tc.ahead >= 0 && got < time.Duration(math.MaxInt64/2) {
				share := min(max(tc.pace.NoShowShare, 0), admission.MaxNoShowShare)
				if math.IsNaN(tc.pace.NoShowShare) {
					share = 0
				}
				floor := time.Duration(float64(tc.ahead+1) * (1 - share) / tc.maxRate * float64(time.Second))
				if got < floor-time.Microsecond {
					t.Fatalf("ETA %v is shorter than the frontier can reach at its configured rate (%v)", got, floor)
				}
			}
		})
	}
}

// TestMeasure steps the pace through readings: the paid rate is the
// frontier's movement less the no-shows it skipped, smoothed, measured
// only while people wait; the no-show share follows the checked positions,
// over about NoShowMemory of them.
func TestMeasure(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int, f float64, n, c int64) admission.Reading {
		return admission.Reading{ServerTime: t0.Add(time.Duration(ms) * time.Millisecond), Frontier: f, NoShows: n, Checked: c}
	}
	// Two smoothed shares, the smaller counts: after 100 positions from
	// nothing measured, the slow one.
	slow := 1 - math.Exp(-100.0/(8*admission.NoShowMemory))
	tests := []struct {
		name    string
		prev    admission.Pace
		a, b    admission.Reading
		waiting bool
		want    admission.Pace
	}{
		{"first measurement is taken whole", admission.Pace{}, at(0, 0, 0, 0), at(1000, 10, 0, 0), true, admission.Pace{Paid: 10, Rated: true}},
		{"then smoothed", admission.Pace{Paid: 10, Rated: true}, at(0, 0, 0, 0), at(500, 10, 0, 0), true, admission.Pace{Paid: 12, Rated: true}},
		{"no-shows skipped are not paid", admission.Pace{}, at(0, 100, 10, 100), at(1000, 130, 30, 200), true,
			admission.Pace{Paid: 10, Rated: true, NoShowShare: slow * 0.2}},
		{"nobody waiting: no rate, but no-shows count", admission.Pace{Paid: 7, Rated: true}, at(0, 100, 0, 0), at(1000, 100, 50, 100), false,
			admission.Pace{Paid: 7, Rated: true, NoShowShare: slow * 0.5}},
		{"no-shows counted back: paid is not negative", admission.Pace{}, at(0, 100, 10, 100), at(1000, 100, 12, 100), true, admission.Pace{Paid: 0, Rated: true}},
		{"readings out of order change nothing", admission.Pace{Paid: 3, Rated: true}, at(1000, 10, 0, 0), at(0, 20, 0, 0), true, admission.Pace{Paid: 3, Rated: true}},
		{"a frontier moved back changes nothing", admission.Pace{Paid: 3, Rated: true}, at(0, 20, 0, 0), at(1000, 10, 0, 0), true, admission.Pace{Paid: 3, Rated: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := admission.Measure(tc.prev, tc.a, tc.b, tc.waiting)
			if got.Rated != tc.want.Rated || math.Abs(got.Paid-tc.want.Paid) > 1e-9 || math.Abs(got.NoShowShare-tc.want.NoShowShare) > 1e-9 {
				t.Fatalf("Measure = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestNoShowShareFollows: a crowd whose no-shows stop mid-way (half of
// them, then none) gets a share that rises slowly and falls quickly:
// within NoShowMemory × 3 positions of the change it counts on fewer than
// 5% no-shows, and while the no-shows last it never counts on more than
// there are.
func TestNoShowShareFollows(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var p admission.Pace
	var r admission.Reading
	for step := 1; step <= 200; step++ { // 10 positions checked a step
		next := r
		next.ServerTime, next.Checked = t0.Add(time.Duration(step)*100*time.Millisecond), r.Checked+10
		if step <= 100 {
			next.NoShows += 5
		}
		p = admission.Measure(p, r, next, false)
		r = next
		if p.NoShowShare > 0.5+1e-9 {
			t.Fatalf("step %d: share %.3f, more than the crowd's 0.5", step, p.NoShowShare)
		}
		if step == 100 && p.NoShowShare < 0.4 {
			t.Fatalf("after 1,000 positions half no-shows: share %.3f, want near 0.5", p.NoShowShare)
		}
		if step == 100+3*admission.NoShowMemory/10 && p.NoShowShare > 0.05 {
			t.Fatalf("%d positions after the no-shows stopped: share %.3f, want below 0.05", 3*admission.NoShowMemory, p.NoShowShare)
		}
	}
}

// TestETASample: the stride is the smallest power of two that keeps a
// queue's sample within ETASamples, and a larger stride's sample is part
// of a smaller one's.
func TestETASample(t *testing.T) {
	for _, tc := range []struct {
		joined int64
		want   uint64
	}{{0, 1}, {1, 1}, {admission.ETASamples, 1}, {admission.ETASamples + 1, 2}, {4 * admission.ETASamples, 4}, {5_000_000, 16384}} {
		if got := admission.ETAStride(tc.joined); got != tc.want {
			t.Errorf("ETAStride(%d) = %d, want %d", tc.joined, got, tc.want)
		}
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("ev\x00someone"))
	if got := admission.ETAWho("ev", "someone"); got != h.Sum64() {
		t.Fatalf("ETAWho = %x, want FNV-1a of event, 0, user: %x", got, h.Sum64())
	}
	const joined = 100_000
	n := 0
	for i := range joined {
		who := admission.ETAWho("ev", "user"+strconv.Itoa(i))
		if admission.ETASampled(who, joined) {
			n++
			if !admission.ETASampled(who, joined/8) {
				t.Fatalf("%d is sampled in a queue of %d but not of %d", who, joined, joined/8)
			}
		}
	}
	if n < admission.ETASamples/4 || n > 2*admission.ETASamples {
		t.Errorf("%d of %d people sampled, want about %d", n, joined, joined/admission.ETAStride(joined))
	}
}
