package admission

import (
	"math"
	"time"
)

// Pace is what a node measured of one queue's movement (the default lane
// or one lane), from the readings of its own ticks (package sale keeps
// it): the ETA rule (ETA) reads it. The zero value is "nothing measured
// yet".
type Pace struct {
	// Paid is the measured rate, per second, of admissions the rate paid
	// for: the frontier's movement less the no-shows it skipped (F − n
	// of the frontier hash), smoothed, measured only while people wait
	// and admission is not held. Meaningful once Rated.
	Paid float64
	// Rated is true once Paid was measured.
	Rated bool
	// NoShowShare is the measured share of admitted positions whose
	// holder never came (no-shows credited per position checked): the
	// smaller of two smoothed shares, one over about NoShowMemory
	// positions and one over eight times as many, so that it follows a
	// crowd that starts coming (fewer no-shows: a shorter discount, a
	// longer ETA) within NoShowMemory positions and one that stops coming
	// only slowly. 0 before a measurement.
	NoShowShare float64
	// fast and slow are the two smoothed shares.
	fast, slow float64
}

// MaxNoShowShare is the largest no-show share the ETA counts on: however
// many no-shows were measured, the ETA assumes at least one in ten of the
// people ahead comes (and takes the rate's time).
const MaxNoShowShare = 0.9

// NoShowMemory is about how many checked positions the quicker of the
// measured no-show shares remembers: a change of the crowd's behaviour
// moves it by 1 − 1/e after this many positions (see Pace.NoShowShare).
const NoShowMemory = 50

// ETA is the admission rule's estimate of the wait of a person with ahead
// people before them in a queue whose rate pays at most maxRate
// admissions a second (admit_rate × the lane's share: the fastest
// advance.lua credits), measured at pace p:
//
//	ETA = (ahead + 1) × (1 − share) / rate
//	rate  = min(max(p.Paid, maxRate / 100), maxRate), or maxRate before a measurement
//	share = min(p.NoShowShare, MaxNoShowShare)
//
// Of the ahead + 1 positions the frontier must pass, a share are no-shows
// it skips (after their grace) and the rest are paid for by the rate. The
// rate is never taken above maxRate: the ETA never promises a time the
// frontier could reach only faster than its configured rate, at the
// measured no-show share, so ETA ≥ (ahead + 1) × (1 − share) / maxRate
// always. A queue measured standing still (max_active full) is taken to
// move at a hundredth of maxRate, not never. A non-positive maxRate has
// no estimate: 0.
//
// ETA is pure; the status answer (Decide) calls it for every waiting
// person, with the view's pace and the configured rate.
func ETA(ahead int64, p Pace, maxRate float64) time.Duration {
	if !(maxRate > 0) || ahead < 0 {
		return 0
	}
	rate := maxRate
	if p.Rated && !math.IsNaN(p.Paid) {
		rate = min(max(p.Paid, maxRate/100), maxRate)
	}
	share := min(max(p.NoShowShare, 0), MaxNoShowShare)
	if math.IsNaN(share) {
		share = 0
	}
	secs := float64(ahead+1) * (1 - share) / rate
	return time.Duration(min(secs, float64(math.MaxInt64/2)/float64(time.Second)) * float64(time.Second))
}

// Measure is the pace after one more reading of a queue: prev is the
// pace before, from the reading was taken at (a, b the readings before
// and after). waiting is true when people are still waiting and
// admission was not held between them: only then does the frontier's
// movement measure the rate. Readings out of order, a reading never
// taken (zero ServerTime) or a frontier moved back (a reset) leave the
// pace as it was.
func Measure(prev Pace, a, b Reading, waiting bool) Pace {
	dt := b.ServerTime.Sub(a.ServerTime).Seconds()
	if a.ServerTime.IsZero() || !(dt > 0) || b.Frontier < a.Frontier || b.Checked < a.Checked {
		return prev
	}
	p := prev
	if waiting {
		paid := ((b.Frontier - float64(b.NoShows)) - (a.Frontier - float64(a.NoShows))) / dt
		if paid < 0 { // no-shows counted back: the next admissions wait for them
			paid = 0
		}
		p.Paid, p.Rated = paid, true
		if prev.Rated {
			p.Paid = 0.8*prev.Paid + 0.2*paid
		}
	}
	if dc := b.Checked - a.Checked; dc > 0 {
		got := float64(b.NoShows-a.NoShows) / float64(dc)
		got = min(max(got, 0), 1)
		p.fast = prev.fast + (1-math.Exp(-float64(dc)/NoShowMemory))*(got-prev.fast)
		p.slow = prev.slow + (1-math.Exp(-float64(dc)/(8*NoShowMemory)))*(got-prev.slow)
		p.NoShowShare = min(p.fast, p.slow)
	}
	return p
}
