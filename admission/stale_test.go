package admission

import (
	"testing"
	"time"
)

// TestStaleFloor steps a frontier through time: the floor is F as it was
// at least age ago, never above it, and samples are taken once a second.
func TestStaleFloor(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	age := 10 * time.Second
	var marks []mark
	var floor int64
	steps := []struct {
		at        time.Duration
		f, want   int64
		wantMarks int
	}{
		{0, 5, 0, 1},
		{500 * time.Millisecond, 7, 0, 1}, // within a second: no sample
		{time.Second, 8, 0, 2},
		{5 * time.Second, 8, 0, 2}, // F did not move: no sample
		{10 * time.Second, 9, 5, 3},
		{10500 * time.Millisecond, 9, 5, 3},
		{11 * time.Second, 12, 8, 3}, // the sample at 0 is dropped
		{30 * time.Second, 12, 12, 1},
	}
	for _, s := range steps {
		prev := marks
		marks, floor = staleFloor(marks, t0.Add(s.at), s.f, age)
		if floor != s.want || len(marks) != s.wantMarks {
			t.Fatalf("at %v: floor %d with %d samples, want %d with %d", s.at, floor, len(marks), s.want, s.wantMarks)
		}
		if len(prev) > 0 && len(marks) > len(prev) && &marks[0] == &prev[0] {
			t.Fatalf("at %v: the samples of an earlier view were reused for a new one", s.at)
		}
	}
}
