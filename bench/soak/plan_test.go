//go:build soak && linux

package soak

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// plan is what one sale exercises beside the core path, drawn from the
// seed: every feature that touches admission or stock (issue 24).
type plan struct {
	// lead is how long after its creation the sale starts (0: at once).
	// Shoppers arrive from the creation on and wait in the prequeue.
	lead time.Duration
	// lane adds an early lane ("early", share laneShare) that starts
	// earlyBy before the sale; a quarter of the shoppers join it with an
	// invite.
	lane bool
	// passUses is how many uses of one bypass pass staff mint at the
	// creation (0: none); that many shoppers join with it.
	passUses int
	// shop sets shop.secret: the shop finishes each default-lane
	// shopper's checkout session (POST …/sessions/{jti}/finished) once
	// they are done, and the stall check watches max_active.
	shop bool
	// edit is a staff save before the start: move the start earlier or
	// later, change supply, change the lane's share.
	edit bool
	// lagFailover fails Redis over before the start, from a replica that
	// stopped replicating a few seconds earlier (the grants of those
	// seconds are lost from Redis, not from the stream), with a staff
	// save between the promotion and the rebuild. Not on the cluster.
	lagFailover bool
	// claimTTL is claim_ttl_seconds: short in some sales, so that unpaid
	// claims (those the stopped worker has not confirmed) expire.
	claimTTL int
	// door gives the sale a door (door_test.go): the run's block list
	// and a rule that sinks the crowd's bots by their user agent; blocked
	// people and bots join its crowd.
	door bool
	// eligible gives the door an eligibility list of the sale's own;
	// some of the crowd is not on it.
	eligible bool
	// change is staff's door change during the sale, changeAt after the
	// start: "block" adds people who joined (some admitted) to the block
	// list, "sink" adds a rule that sinks a cohort of the crowd, "both"
	// does both; "" none.
	change   string
	changeAt time.Duration

	// rings (issue 36) limits claims per payment fingerprint (one a
	// value) and records each claim's device, both read from headers the
	// shop signs (signed_header), with deviceLimit one claim per device
	// too; a quarter of the crowd belongs to rings sharing a payment
	// instrument, a device or both, and staff sweep the sale and cancel
	// ring groups and single claims during and after it (rings_test.go).
	// A sale with signal limits has one bucket. Drawn from a generator of
	// its own (drawRings), so the other draws of a recorded seed stay.
	rings, deviceLimit bool

	// Set by the put-back tests only: the share of arrivals sent with the
	// pass (default 0.05) and to the lane (default 0.3), and how long the
	// order worker stops, from stopWorkerAt after the start (claims stay
	// pending meanwhile).
	passShare, laneShareOf   float64
	stopWorker, stopWorkerAt time.Duration
	// lagFrom, when set, is the fraction of the lead at which the replica
	// of a lagFailover stops copying, and it lags until 0.75 of the lead
	// (default: from 0.55, for 1.5-3 s).
	lagFrom float64
}

// passFrac and laneFrac are the shares of arrivals sent with the pass
// and to the lane.
func (p plan) passFrac() float64 {
	if p.passShare > 0 {
		return p.passShare
	}
	return 0.05
}

func (p plan) laneFrac() float64 {
	if p.laneShareOf > 0 {
		return p.laneShareOf
	}
	return 0.3
}

const (
	laneName  = "early"
	laneShare = 0.3
)

// drawPlan draws a sale's plan. The first sale of a run keeps the core
// path (start at once, nothing else), so a short run still covers it.
func drawPlan(rnd *rand.Rand, n int, onCluster bool) plan {
	p := plan{claimTTL: 1800}
	if n == 1 {
		return p
	}
	if rnd.Float64() < 0.75 {
		p.lead = dur(rnd, 12*time.Second, 24*time.Second)
	}
	p.lane = p.lead > 0 && rnd.Float64() < 0.6
	if rnd.Float64() < 0.6 {
		p.passUses = 2 + rnd.IntN(5)
	}
	p.shop = rnd.Float64() < 0.7
	p.edit = p.lead > 0 && rnd.Float64() < 0.7
	p.lagFailover = !onCluster && p.lead > 0 && (p.lane || p.passUses > 0) && rnd.Float64() < 0.35
	if rnd.Float64() < 0.4 {
		p.claimTTL = 10 + rnd.IntN(6) // the shortest a sale takes
	}
	// The door: the first drawn sale has all of it, so that a 2-minute
	// run covers it; later ones draw it.
	p.door = n == 2 || rnd.Float64() < 0.75
	p.eligible = p.door && (n == 2 || rnd.Float64() < 0.35)
	if p.door {
		p.change = []string{"block", "sink", "both", ""}[rnd.IntN(4)]
		if n == 2 {
			p.change = "both"
		}
		p.changeAt = dur(rnd, 3*time.Second, 8*time.Second)
	}
	return p
}

// drawRings draws whether sale n has rings and staff cancelling (issue
// 36), and whether it limits devices too: the first drawn sale has rings
// with devices recorded, not limited (so that the sweep finds device
// rings of several claims in a 2-minute run), later ones half the time.
func drawRings(rnd *rand.Rand, n int) (rings, deviceLimit bool) {
	if n == 1 {
		return false, false
	}
	rings = n == 2 || rnd.Float64() < 0.5
	deviceLimit = rings && n > 2 && rnd.Float64() < 0.5
	return rings, deviceLimit
}

// earlyBy is how long before the sale an early lane starts: half the
// lead.
func (p plan) earlyBy() time.Duration { return p.lead / 2 }

// String names the features a sale exercises, for the log.
func (p plan) String() string {
	s := "start at once"
	if p.lead > 0 {
		s = "start in " + p.lead.Round(time.Second).String()
	}
	if p.lane {
		s += ", early lane"
	}
	if p.passUses > 0 {
		s += ", bypass pass"
	}
	if p.shop {
		s += ", shop finishes sessions"
	}
	if p.edit {
		s += ", staff edit before the start"
	}
	if p.lagFailover {
		s += ", failover from a lagging replica before the start"
	}
	if p.claimTTL < 60 {
		s += ", short claim TTL"
	}
	if p.door {
		s += ", door (block list, sunk bots)"
	}
	if p.eligible {
		s += ", eligibility list"
	}
	if p.rings {
		s += ", rings sharing payment and devices (one claim a payment"
		if p.deviceLimit {
			s += " and a device"
		}
		s += "), staff cancelling"
	}
	if p.change != "" {
		s += fmt.Sprintf(", door change (%s) %s after the start", p.change, p.changeAt.Round(100*time.Millisecond))
	}
	return s
}
