package sale_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/sale"
)

// BenchmarkShownETA is what keeping the ETA sample adds to one waiting
// status answer, in a queue of a million: "other" for the people not in
// the sample (a hash, no lock), "sampled" for one who is (a lock and an
// append, until the node's cap), beside "decide", the answer itself.
func BenchmarkShownETA(b *testing.B) {
	now := time.Now()
	v := &admission.Sale{Config: event.Config{ID: "ev", AdmitRatePerSecond: 100, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)},
		Reading: admission.Reading{Joined: 1_000_000, WindowFrozen: true, Frontier: 10}}
	d := admission.Decision{State: admission.Waiting, Position: 5000, Ahead: 4989, ETA: 50 * time.Second}
	var sampled, other string
	for i := 0; sampled == "" || other == ""; i++ {
		u := "user" + strconv.Itoa(i)
		if admission.ETASampled(admission.ETAWho("ev", u), v.Joined) {
			sampled = u
		} else {
			other = u
		}
	}
	half := func() float64 { return 0.5 }
	b.Run("decide", func(b *testing.B) {
		for b.Loop() {
			admission.Decide(v, 5000, now, half)
		}
	})
	for _, c := range []struct{ name, user string }{{"other", other}, {"sampled", sampled}} {
		b.Run(c.name, func(b *testing.B) {
			s := sale.NewSnapshots(nil, nil, nil)
			for b.Loop() {
				s.ShownETA(v, c.user, now, d)
			}
		})
	}
}
