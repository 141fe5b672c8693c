package report

import (
	"context"
	"fmt"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// Lane is the conversion of one lane: of its queue (Joined, Admitted)
// and of the claims its admissions made (Buyers, UnitsGranted,
// Confirmed), each claim placed in the lane by the position it carries
// (queue.Unlane; admission.PassPosition for a bypass pass).
type Lane struct {
	Lane string `json:"lane"`
	// Joined is the lane's queue counter and Admitted min(F, joined) of
	// the lane's frontier F. For PassLane: Joined is 0 (a pass skips the
	// queue) and Admitted the redemptions (each one an admission).
	Joined   int64 `json:"joined"`
	Admitted int64 `json:"admitted"`
	// Buyers are the distinct users granted a claim with an admission
	// of the lane; UnitsGranted their units; Confirmed the claims the
	// order worker confirmed.
	Buyers       int64 `json:"buyers"`
	UnitsGranted int64 `json:"units_granted"`
	Confirmed    int64 `json:"confirmed"`
	// Conversion is Buyers / Admitted (0 while nobody was admitted).
	Conversion float64 `json:"conversion"`
}

// Lane names in the report besides the event's own lanes' names.
const (
	// DefaultLane is the queue of everyone not in another lane.
	DefaultLane = "default"
	// PassLane holds the admissions and claims of bypass passes.
	PassLane = "pass"
)

// passLane keys the claims of bypass passes among the lane indexes.
const passLane = -1

// laneOf is the lane index of a claim's position: 0 the default lane,
// i the i-th of event.Config.Lanes, passLane for a bypass pass.
func laneOf(pos int64) int {
	if pos == admission.PassPosition {
		return passLane
	}
	lane, _ := queue.Unlane(pos)
	return lane
}

// laneTallies reads the queue counters of each of cfg's lanes, in order.
func (b *Builder) laneTallies(ctx context.Context, cfg *event.Config) ([]admission.LaneTally, error) {
	out := make([]admission.LaneTally, len(cfg.Lanes))
	for i := range cfg.Lanes {
		t, err := b.Tallies.TallyLane(ctx, cfg.ID, i+1)
		if err != nil {
			return nil, fmt.Errorf("report %s: %w", cfg.ID, err)
		}
		out[i] = t
	}
	return out, nil
}

// lanesOf gives the report's lanes: queues[0] is the default lane's,
// queues[i] that of cfg.Lanes[i-1]; the pass row once a pass was minted
// or a claim made with one. Claims of a position in no configured lane
// count in the funnel only.
func lanesOf(cfg *event.Config, queues []admission.LaneTally, o *orderTotals, passes admission.PassCounts) []Lane {
	out := make([]Lane, 0, len(queues)+1)
	for i, q := range queues {
		name := DefaultLane
		if i > 0 {
			name = cfg.Lanes[i-1].Name
		}
		out = append(out, newLane(name, q.Joined, min(int64(q.Frontier), q.Joined), o.lanes[i]))
	}
	if lo := o.lanes[passLane]; lo != nil || passes.Minted > 0 {
		out = append(out, newLane(PassLane, 0, passes.Redeemed, lo))
	}
	return out
}

func newLane(name string, joined, admitted int64, lo *laneOrders) Lane {
	l := Lane{Lane: name, Joined: joined, Admitted: admitted}
	if lo != nil {
		l.Buyers, l.UnitsGranted, l.Confirmed = int64(len(lo.buyers)), lo.units, lo.confirmed
	}
	if admitted > 0 {
		l.Conversion = float64(l.Buyers) / float64(admitted)
	}
	return l
}
