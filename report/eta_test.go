package report_test

import (
	"math"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/report"
)

// TestETAErrorOf works the definition through by hand: the points of the
// wait, the answer taken at each, people left out (never admitted,
// admitted at their first answer, outside the final stride, of no lane),
// answers of several nodes out of order, and nearest-rank percentiles.
func TestETAErrorOf(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	w := func(lane int, who uint64, s int, eta int64) admission.ETAAnswer {
		return admission.ETAAnswer{Lane: lane, Who: who, At: at(s), ETASeconds: eta}
	}
	adm := func(lane int, who uint64, s int) admission.ETAAnswer {
		return admission.ETAAnswer{Lane: lane, Who: who, At: at(s), Admitted: true}
	}
	answers := []admission.ETAAnswer{
		// who 0: waits 100 s; answers at 0, 30, 50, 80 (one node), admitted at 100 (another node, written first).
		adm(0, 0, 100), w(0, 0, 50, 60), w(0, 0, 0, 100), w(0, 0, 30, 60), w(0, 0, 80, 10),
		adm(0, 0, 130), // a later admitted answer changes nothing
		// who 2: waits 20 s, answered at 10 only: no answer after a quarter.
		w(0, 2, 10, 50), adm(0, 2, 30),
		// who 4: never admitted. who 6: admitted at the first answer.
		w(0, 4, 0, 10), w(0, 4, 20, 5), adm(0, 6, 5), w(0, 6, 6, 3),
		// who 1: not in the final stride of a queue of 600 (2).
		w(0, 1, 0, 10), adm(0, 1, 10),
		// lane 1 (stride 1): who 3 waits 40 s, ETA right at join, 50% too long at a quarter.
		w(1, 3, 0, 40), w(1, 3, 10, 45), adm(1, 3, 40),
		// lane 7: no such lane.
		w(7, 8, 0, 1), adm(7, 8, 1),
	}
	got := report.ETAErrorOf(answers, []string{"default", "members"}, []int64{600, 3})
	want := []report.ETAError{
		{Lane: "default", Stride: 2, People: 2, Points: []report.ETAPoint{
			// errors 0 (who 0: 100 s shown, 100 s left) and 1.5 (who 2: 50 shown, 20 left)
			{At: "join", Count: 2, MedianAbs: 0, P90Abs: 1.5, Median: 0},
			// who 0 at 30 s: 60 shown, 70 left
			{At: "q25", Count: 1, MedianAbs: 1.0 / 7, P90Abs: 1.0 / 7, Median: -1.0 / 7},
			// at 50 s: 60 shown, 50 left
			{At: "q50", Count: 1, MedianAbs: 0.2, P90Abs: 0.2, Median: 0.2},
			// the first answer after 75 s, at 80 s: 10 shown, 20 left
			{At: "q75", Count: 1, MedianAbs: 0.5, P90Abs: 0.5, Median: -0.5},
		}},
		{Lane: "members", Stride: 1, People: 1, Points: []report.ETAPoint{
			{At: "join", Count: 1},
			{At: "q25", Count: 1, MedianAbs: 0.5, P90Abs: 0.5, Median: 0.5},
			{At: "q50", Count: 0}, {At: "q75", Count: 0},
		}},
	}
	if !closeErrors(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}

// closeErrors compares ETA errors, figures to 1e-12.
func closeErrors(a, b []report.ETAError) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Lane != y.Lane || x.Stride != y.Stride || x.People != y.People || len(x.Points) != len(y.Points) {
			return false
		}
		for j := range x.Points {
			p, q := x.Points[j], y.Points[j]
			if p.At != q.At || p.Count != q.Count || math.Abs(p.MedianAbs-q.MedianAbs) > 1e-12 ||
				math.Abs(p.P90Abs-q.P90Abs) > 1e-12 || math.Abs(p.Median-q.Median) > 1e-12 {
				return false
			}
		}
	}
	return true
}
