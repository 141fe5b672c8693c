// Package report builds an event's post-sale report: the funnel (joined,
// admitted, present, no-shows, claims granted, released and confirmed),
// the waits from join to admission and from admission to claim, conversion
// per lane, refusals by reason, what the door did (its rules' matches,
// the joins it refused or sank), the draw's verification data and how far
// the ETA shown was from the real wait (ETAError).
//
// Every figure comes from durable state, never from one node's memory: the
// event's configuration and admission counters in Redis (the frontier
// hashes of the event and of each lane, the lanes' queue counters, the
// wait histograms advance.lua keeps, the bypass pass counters, the
// refusal and rule-match counts Refusals flushes, the ETA sample's
// answers the nodes' ticks wrote), and the order stream and the order
// worker's records on JetStream; each claim falls in the lane of the position it
// carries. Any node, started at any time, builds the same report.
package report

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/nats-io/nats.go/jetstream"
)

// Report is one event's post-sale report. Its JSON is the download of
// GET /admin/events/{id}/report.
type Report struct {
	Event       string    `json:"event"`
	Name        string    `json:"name"`
	GeneratedAt time.Time `json:"generated_at"`
	// Supply is the units on sale (supply − reserve).
	Supply int64  `json:"supply"`
	Funnel Funnel `json:"funnel"`
	// JoinToAdmission is the time from joining to the first admission
	// token, once per person who fetched one; AdmissionToClaim the time
	// from the admission token a claim used to the person's first grant.
	JoinToAdmission  Waits `json:"join_to_admission"`
	AdmissionToClaim Waits `json:"admission_to_claim"`
	// Lanes is the conversion per lane: DefaultLane, the event's lanes
	// in the order of its configuration, and PassLane once a pass was
	// minted or used.
	Lanes []Lane `json:"lanes"`
	// Passes are the event's bypass pass counters.
	Passes admission.PassCounts `json:"passes"`
	// Refusals are the requests the edge refused, by reason; Door what
	// the sale's door did (its rules' matches are not refusals).
	Refusals []Refusal `json:"refusals"`
	// Cancellations are the claims staff cancelled, by reason, most
	// first (Funnel.Cancelled sums them).
	Cancellations []Cancellation `json:"cancellations"`
	Door          Door           `json:"door"`
	Draw          Draw           `json:"draw"`
	// ETAError is how far the ETA shown was from the real wait, per
	// queue lane (DefaultLane, then the event's lanes), on a sample.
	ETAError []ETAError `json:"eta_error"`
}

// Funnel counts people and claims from joining to a confirmed order.
// Joined, Admitted, Present and NoShows add up the queues of every lane;
// the claims count every claim, those made with a bypass pass too.
type Funnel struct {
	Joined int64 `json:"joined"`
	// Admitted is min(F, joined): positions the frontier reached.
	Admitted int64 `json:"admitted"`
	// Present fetched an admission token; NoShows were admitted, never
	// fetched one within the grace, and the frontier moved past them.
	Present int64 `json:"present"`
	NoShows int64 `json:"no_shows"`
	// Claims by distinct claim id on the order stream; Confirmed as the
	// order worker recorded them.
	Granted   int64 `json:"granted"`
	Released  int64 `json:"released"`
	Confirmed int64 `json:"confirmed"`
	// Buyers are the distinct users granted at least one claim;
	// UnitsGranted and UnitsReleased count units.
	Buyers        int64 `json:"buyers"`
	UnitsGranted  int64 `json:"units_granted"`
	UnitsReleased int64 `json:"units_released"`
	// Cancelled counts the claims staff cancelled (order_cancelled
	// events, once per claim); Restocked those whose unit went back to
	// the stock.
	Cancelled int64 `json:"cancelled"`
	Restocked int64 `json:"restocked"`
}

// Cancellation is how many claims staff cancelled for one reason.
type Cancellation struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Waits is a wait histogram: Counts[i] waits of at most BoundsSeconds[i]
// seconds (and more than the bound before), the last entry beyond them.
type Waits struct {
	BoundsSeconds []int64 `json:"bounds_seconds"`
	Counts        []int64 `json:"counts"`
	Count         int64   `json:"count"`
	MeanSeconds   float64 `json:"mean_seconds"`
}

// Refusal is how many requests the edge refused for one reason:
// "<join|claim>.<problem code>", e.g. join.pow_required, claim.sold_out.
type Refusal struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Draw is what anyone needs to verify the shuffle or the lottery (see
// anteroom verify): the commitment published before the sale and, once
// the window closed, the seed and the window size.
type Draw struct {
	Mode           event.Mode `json:"mode"`
	SeedCommitment string     `json:"seed_commitment"`
	Seed           string     `json:"seed,omitempty"`
	WindowSize     *int64     `json:"window_size,omitempty"`
	WindowClosesAt time.Time  `json:"window_closes_at"`
}

// Consumer-side interfaces of the report's sources.
type (
	configs interface {
		Get(ctx context.Context, id string) (event.Config, error)
	}
	tallies interface {
		Tally(ctx context.Context, ev string) (admission.Tally, error)
		TallyLane(ctx context.Context, ev string, lane int) (admission.LaneTally, error)
		ETAAnswers(ctx context.Context, ev string) ([]admission.ETAAnswer, error)
	}
	// sales is the node's view, refreshed from Redis every tick: joined
	// and the frozen window size come from it (with join shards they are
	// read from every shard on the tick).
	sales interface {
		Get(id string) (*admission.Sale, bool)
	}
	refusalCounts interface {
		Read(ctx context.Context, ev string) (map[string]int64, error)
	}
	passCounts interface {
		Counts(ctx context.Context, ev string) (admission.PassCounts, error)
	}
)

// Builder builds reports. Its fields are the sources, all required but
// Now: Tallies is *admission.Frontier, Passes *admission.Passes.
type Builder struct {
	Configs  configs
	Tallies  tallies
	Sales    sales
	Refusals refusalCounts
	Passes   passCounts
	JS       jetstream.JetStream
	// Now is the clock of GeneratedAt.
	//
	// Default: time.Now
	Now func() time.Time
}

// ErrNotInView is returned for an event the node has not read yet.
var ErrNotInView = errors.New("report: the event is not in this node's view yet")

// Build reads every source of event ev's report. Errors wrap the failing
// source's error; event.ErrNotFound for an unknown event.
func (b *Builder) Build(ctx context.Context, ev string) (Report, error) {
	cfg, err := b.Configs.Get(ctx, ev)
	if err != nil {
		return Report{}, err
	}
	sale, ok := b.Sales.Get(cfg.ID)
	if !ok {
		return Report{}, ErrNotInView
	}
	// The lanes' counters first, then the event's tally: a lane's step
	// counts a position present and adds its wait to the event's tally in
	// one script, so read in this order every present person's wait is in
	// the histograms (read the other way, a step in between counted a
	// person whose wait was missing).
	lanes, err := b.laneTallies(ctx, &cfg)
	if err != nil {
		return Report{}, err
	}
	tally, err := b.Tallies.Tally(ctx, cfg.ID)
	if err != nil {
		return Report{}, err
	}
	refused, err := b.Refusals.Read(ctx, cfg.ID)
	if err != nil {
		return Report{}, err
	}
	orders, err := b.orders(ctx, cfg.ID)
	if err != nil {
		return Report{}, err
	}
	passes, err := b.Passes.Counts(ctx, cfg.ID)
	if err != nil {
		return Report{}, err
	}
	answers, err := b.Tallies.ETAAnswers(ctx, cfg.ID)
	if err != nil {
		return Report{}, err
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	r := Report{
		Event: cfg.ID, Name: cfg.Name, GeneratedAt: now().UTC(), Supply: cfg.OnSale(),
		JoinToAdmission: waitsOf(tally.JoinToAdmission), AdmissionToClaim: waitsOf(tally.AdmissionToClaim),
		Draw: Draw{Mode: cfg.Mode, SeedCommitment: cfg.SeedCommitment, WindowClosesAt: cfg.WindowEnd()}, Passes: passes,
	}
	queues := append([]admission.LaneTally{{Joined: sale.Joined, Frontier: tally.Frontier, Present: tally.Present, NoShows: tally.NoShows}}, lanes...)
	f := &r.Funnel
	for _, q := range queues {
		f.Joined += q.Joined
		f.Admitted += min(int64(q.Frontier), q.Joined)
		f.Present += q.Present
		f.NoShows += q.NoShows
	}
	f.Granted, f.Released, f.Confirmed = int64(len(orders.granted)), int64(len(orders.released)), orders.confirmed
	f.Buyers, f.UnitsGranted, f.UnitsReleased = int64(len(orders.buyers)), orders.unitsGranted, orders.unitsReleased
	f.Restocked = int64(len(orders.restocked))
	r.Cancellations = make([]Cancellation, 0, len(orders.cancelled))
	for reason, ids := range orders.cancelled {
		f.Cancelled += int64(len(ids))
		r.Cancellations = append(r.Cancellations, Cancellation{Reason: reason, Count: int64(len(ids))})
	}
	slices.SortFunc(r.Cancellations, func(a, b Cancellation) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
	})
	if sale.WindowFrozen {
		r.Draw.Seed = cfg.Seed
		w := sale.Window
		r.Draw.WindowSize = &w
	}
	r.Lanes = lanesOf(&cfg, queues, &orders, passes)
	names, joined := make([]string, len(queues)), make([]int64, len(queues))
	for i, q := range queues {
		names[i], joined[i] = r.Lanes[i].Lane, q.Joined
	}
	r.ETAError = ETAErrorOf(answers, names, joined)
	r.Door, refused = doorOf(&cfg, refused)
	r.Refusals = make([]Refusal, 0, len(refused))
	for reason, n := range refused {
		r.Refusals = append(r.Refusals, Refusal{Reason: reason, Count: n})
	}
	slices.SortFunc(r.Refusals, func(a, b Refusal) int { return strings.Compare(a.Reason, b.Reason) })
	return r, nil
}

func waitsOf(h admission.Histogram) Waits {
	w := Waits{BoundsSeconds: admission.WaitBounds, Counts: h.Counts, Count: h.Count}
	if h.Count > 0 {
		w.MeanSeconds = float64(h.SumSeconds) / float64(h.Count)
	}
	return w
}
