package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/anteroom/anteroom/admission"
)

// ETAError is how far the ETA that one lane's sampled people were shown
// was from the wait they really had (see admission.ETAStride for the
// sample: 1 in Stride of the lane's people, by a hash of event and user;
// every node keeps its status answers to them and its tick writes them to
// Redis).
//
// A sampled person's wait, as the ETA is about it, runs from t0, their
// first "waiting" status answer (for a later joiner the join; for a
// member of the shuffle window the first answer after the draw, before
// which the page shows the draw's countdown, not a wait), to tA, their
// first admitted answer, on whichever nodes. At each point, join (t0)
// and a quarter, half and three quarters of the wait (t0 + q × (tA − t0)),
// the answer taken is the first waiting answer given at or after it, at
// t; its relative error is
//
//	e = (eta_seconds − (tA − t)) / (tA − t)
//
// signed: above 0 the ETA promised a longer wait than there was, below 0
// a shorter one (−0.5: half the real remaining wait). A point reports the
// median and the 90th percentile of |e| — how far off, whichever way, as
// errors either way must not cancel out — and the median of e, the bias.
// Percentiles are nearest-rank: the value at rank ⌈p × n⌉ of the n
// sorted errors, so every figure is one person's. People never admitted
// (still waiting, sold out, gone), and those admitted at their first
// answer, have no wait to compare with and are not counted; a person
// with no answer between a point and tA has none at that point.
type ETAError struct {
	Lane   string `json:"lane"`
	Stride uint64 `json:"stride"`
	// People are the sampled people who waited and were admitted.
	People int64      `json:"people"`
	Points []ETAPoint `json:"points"`
}

// ETAPoint is the ETA's error at one point of the wait.
type ETAPoint struct {
	// At is the point: "join", "q25", "q50" or "q75" (a quarter, half,
	// three quarters of the wait).
	At string `json:"at"`
	// Count is the people with an answer at the point.
	Count int64 `json:"count"`
	// MedianAbs and P90Abs are the median and the 90th percentile of
	// |e|; Median is the median of e (0 each when Count is 0).
	MedianAbs float64 `json:"median_abs_error"`
	P90Abs    float64 `json:"p90_abs_error"`
	Median    float64 `json:"median_error"`
}

// ETAPoints name the points of the wait ETAError reports, in order: q of
// them is at q/4 of the wait.
var ETAPoints = []string{"join", "q25", "q50", "q75"}

// ETAErrorOf is the ETA's error per lane from the answers the nodes
// recorded (admission.Frontier.ETAAnswers): names[i] is lane i's name
// (0: the default lane) and joined[i] how many joined it, whose stride
// picks the lane's sample (answers of people not in it, kept while the
// lane was smaller, are left out).
func ETAErrorOf(answers []admission.ETAAnswer, names []string, joined []int64) []ETAError {
	type person struct {
		lane int
		who  uint64
	}
	by := map[person][]admission.ETAAnswer{}
	strides := make([]uint64, len(names))
	for i := range names {
		strides[i] = admission.ETAStride(joined[i])
	}
	for _, a := range answers {
		if a.Lane < 0 || a.Lane >= len(names) || a.Who%strides[a.Lane] != 0 {
			continue
		}
		p := person{a.Lane, a.Who}
		by[p] = append(by[p], a)
	}
	errs := make([][][]float64, len(names)) // lane → point → errors
	people := make([]int64, len(names))
	for i := range errs {
		errs[i] = make([][]float64, len(ETAPoints))
	}
	for p, as := range by {
		es, ok := personErrors(as)
		if !ok {
			continue
		}
		people[p.lane]++
		for q, e := range es {
			if !math.IsNaN(e) {
				errs[p.lane][q] = append(errs[p.lane][q], e)
			}
		}
	}
	out := make([]ETAError, len(names))
	for i, name := range names {
		out[i] = ETAError{Lane: name, Stride: strides[i], People: people[i], Points: make([]ETAPoint, len(ETAPoints))}
		for q, at := range ETAPoints {
			out[i].Points[q] = pointOf(at, errs[i][q])
		}
	}
	return out
}

// personErrors is one person's relative error at each of ETAPoints (NaN:
// no answer at that point); false when the person has no wait to compare
// with.
func personErrors(as []admission.ETAAnswer) ([]float64, bool) {
	slices.SortStableFunc(as, func(a, b admission.ETAAnswer) int { return a.At.Compare(b.At) })
	var tA time.Time
	var waits []admission.ETAAnswer
	for _, a := range as {
		if a.Admitted {
			tA = a.At
			break
		}
		waits = append(waits, a)
	}
	if tA.IsZero() || len(waits) == 0 || !waits[0].At.Before(tA) {
		return nil, false
	}
	t0, wait := waits[0].At, tA.Sub(waits[0].At)
	out := make([]float64, len(ETAPoints))
	for q := range ETAPoints {
		out[q] = math.NaN()
		at := t0.Add(wait * time.Duration(q) / time.Duration(len(ETAPoints)))
		i, _ := slices.BinarySearchFunc(waits, at, func(a admission.ETAAnswer, t time.Time) int { return a.At.Compare(t) })
		if i < len(waits) {
			left := tA.Sub(waits[i].At).Seconds()
			out[q] = (float64(waits[i].ETASeconds) - left) / left
		}
	}
	return out, true
}

// pointOf sums up the errors es at point at.
func pointOf(at string, es []float64) ETAPoint {
	p := ETAPoint{At: at, Count: int64(len(es))}
	if len(es) == 0 {
		return p
	}
	abs := make([]float64, len(es))
	for i, e := range es {
		abs[i] = math.Abs(e)
	}
	slices.Sort(abs)
	signed := slices.Clone(es)
	slices.SortFunc(signed, cmp.Compare[float64])
	p.MedianAbs, p.P90Abs, p.Median = rank(abs, 50), rank(abs, 90), rank(signed, 50)
	return p
}

// rank is the nearest-rank pct-th percentile of sorted xs, not empty:
// xs[⌈pct × n / 100⌉ − 1], in integers.
func rank(xs []float64, pct int) float64 {
	i := (pct*len(xs)+99)/100 - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
