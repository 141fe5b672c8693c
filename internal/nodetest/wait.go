package nodetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// Waiting on a loaded machine.
//
// A test waits for two different things. The scenario: a sale starts in
// 2 s, admits 5 a second, a claim expires after 3 s; these come from the
// sale's own timings and are known. And the machine: starting a node or
// a browser, a request, a page load, a proof of work; milliseconds on an
// idle laptop, tens of seconds on a CI runner busy with other jobs and
// the race detector. A fixed budget for the machine is what a loaded
// machine misses, so no wait here has one:
//
//   - WaitFor(t, what, d, cond) takes d as the scenario's time only (0
//     when the condition follows at once from what the test did) and
//     allows Patience on top for the machine.
//   - A test that must finish some setup (joins, opening pages) before a
//     moment of the sale (its start, a window's close) does not schedule
//     that moment a fixed few seconds ahead: it measures its setup on this
//     machine now (Pace) and schedules the moment Lead(setup) ahead.
//
// Neither makes a passing test slower on an idle machine: WaitFor returns
// as soon as the condition holds, and Lead is never shorter than the
// scenario's own figure.

// Patience is how long a test waits for the machine, on top of the
// scenario's own time, before it calls a wait hung. It bounds only a test
// that fails: a passing test never waits it out.
const Patience = 2 * time.Minute

// WaitFor polls cond every 20 ms until it holds, and fails the test when it
// does not hold within d, the scenario's own time (see above), plus
// Patience. It never sleeps longer than it must. It is testenv.WaitFor
// with the patience added.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("%s (the scenario's %s and %s of patience)", what, d, Patience), d+Patience, cond)
}

// Pace runs step, the setup a test must finish before some moment of a
// sale, and returns how long it took: the measured speed of this machine
// now. A test that must repeat that setup before the moment schedules it
// Lead(times × Pace) ahead.
func Pace(step func()) time.Duration {
	start := time.Now()
	step()
	return time.Since(start)
}

// Lead returns how far ahead of now to schedule a sale's moment that a
// setup measured at setup (see Pace) must come before: three times the
// setup, a margin for the load to grow meanwhile, and never less than
// least, the scenario's own figure, which it keeps on an idle machine.
// The result is a whole number of seconds, as the sale's times are.
func Lead(setup, least time.Duration) time.Duration {
	return max(least, (3*setup).Truncate(time.Second)+time.Second)
}
