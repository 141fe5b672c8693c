package crowd

import (
	"slices"
	"testing"
	"time"
)

// TestWheel: ids come due in their slot's turn and never before their
// instant, a past instant comes due at once, an instant beyond the span at
// its far end, and slots are reused.
func TestWheel(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w := newWheel(start, 10*time.Millisecond, time.Second)
	w.add(start.Add(25*time.Millisecond), 1)
	w.add(start.Add(-time.Hour), 2)
	w.add(start.Add(time.Hour), 3)
	w.add(start.Add(500*time.Millisecond), 4)
	if got := w.due(start.Add(5*time.Millisecond), nil); !slices.Equal(got, []uint32{2}) {
		t.Fatalf("due at 5ms: %v, want [2]", got)
	}
	if got := w.due(start.Add(21*time.Millisecond), nil); len(got) != 0 {
		t.Fatalf("due at 21ms: %v, want none (1 is due at 25ms)", got)
	}
	if got := w.due(start.Add(30*time.Millisecond), nil); !slices.Equal(got, []uint32{1}) {
		t.Fatalf("due at 30ms: %v, want [1]", got)
	}
	if got := w.due(start.Add(600*time.Millisecond), nil); !slices.Equal(got, []uint32{4}) {
		t.Fatalf("due at 600ms: %v, want [4]", got)
	}
	w.add(start.Add(1100*time.Millisecond), 5) // wraps onto a fired slot
	if got := w.due(start.Add(1200*time.Millisecond), nil); !slices.Equal(got, []uint32{3, 5}) {
		t.Fatalf("due at 1.2s: %v, want [3 5]", got)
	}
}

// TestHistQuantile: a quantile is its bucket's upper bound, at most 9%
// above the true value and never above the largest seen.
func TestHistQuantile(t *testing.T) {
	var h hist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, q := range []float64{0.5, 0.99} {
		want := time.Duration(q*1000) * time.Millisecond
		if got := h.quantile(q); got < want || got > want*109/100 {
			t.Errorf("q%.2f = %s, want within 9%% above %s", q, got, want)
		}
	}
	if got := h.summary().Max; got != time.Second {
		t.Errorf("max %s, want 1s", got)
	}
}
