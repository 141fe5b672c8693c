package admission

import (
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// Holder is who holds one pending claim, as the frontier counts people
// under max_active: the admission position the claim was made with and the
// user. Every bypass pass holder has the same position (PassPosition), so
// only the user names a person.
type Holder struct {
	Pos  int64
	User string
}

// Stock is what one step needs to know of a sale's stock, as the node read
// it on this tick.
type Stock struct {
	// Left is the units left for sale, over every bucket.
	Left int64
	// Known is false while some bucket's stock is not what it will be
	// (being laid or rebuilt, or never laid): stock not known is not gone.
	Known bool
	// WasSoldOut is whether the node's previous view judged the sale sold
	// out; a step on stock not known keeps that judgement.
	WasSoldOut bool
	// Released counts units released back to stock since the sale began.
	Released int64
	// Pending are the holders of pending claims now, one per claim (read
	// only when the sale has max_active).
	Pending []Holder
}

// Plan is one tick's steps of one sale: the default lane's and every
// lane's, and the sold-out judgement they hold on. The per-tick marks
// (Step.Present, Claimed, Late, HeldFrom) are the caller's to add.
type Plan struct {
	// SoldOut is true when no stock is left (never for a safety-net room,
	// which has none to sell; as before while the stock is not known).
	SoldOut bool
	// Step is the default lane's step.
	Step Step
	// Lanes are the steps of the sale's lanes, in the order of
	// Config.Lanes (Step.Lane i+1); nil without lanes.
	Lanes []Step
}

// StepFor is the admission rule: how fast people get in to sale cfg given
// its stock, its join-shard order (nil for a queue on one slot), the most
// time one step may credit (0: DefaultMaxCredit) and the Redis TIME until
// which the view cfg was read in may act (zero: no bound).
//
//   - Rate × share: the default lane admits admit_rate × Config.DefaultShare
//     a second from the window's end, each lane admit_rate × its share from
//     its own start; the rates sum to admit_rate.
//   - Holds: a paused, closed (event.Closure) or sold-out sale holds every
//     lane (Step.Hold); a sale with a shop health check holds while the
//     shop fails (Step.HealthChecked; the script reads the check's state).
//   - Caps: a lottery admits at most no-shows + units on sale + units
//     released (Step.Units); max_active caps the default lane's active
//     people, counting every pending claim (Step.MaxActive, Step.Pending).
//     Lanes have neither cap.
//   - Credit: no step credits more than credit of time to the rate.
//
// StepFor is pure: it reads no clock and no store, so the same inputs give
// the same plan on every node.
func StepFor(cfg *event.Config, stock Stock, order *queue.Order, credit time.Duration, viewUntil time.Time) Plan {
	// A safety-net room has no stock: it is never sold out. Stock not
	// known (being laid or rebuilt, or not laid yet) is not gone: the
	// view keeps what it knew.
	soldOut := stock.Left <= 0 && !cfg.IsSafetyNet()
	if !stock.Known {
		soldOut = stock.WasSoldOut
	}
	base := Step{
		Start: cfg.WindowEnd(), Rate: cfg.AdmitRatePerSecond * cfg.DefaultShare(), Hold: cfg.Paused || cfg.IsClosed() || soldOut,
		Grace:   time.Duration(cfg.NoShowGraceSeconds) * time.Second,
		Lottery: cfg.Mode == event.Lottery, Units: cfg.OnSale() + stock.Released,
		MaxActive: cfg.MaxActive, AdmissionTTL: time.Duration(cfg.AdmissionTTLSeconds) * time.Second,
		Pending: stock.Pending, Order: order, MaxCredit: credit,
		HealthChecked: cfg.HealthChecked(), ViewUntil: viewUntil,
	}
	p := Plan{SoldOut: soldOut, Step: base}
	if len(cfg.Lanes) > 0 {
		p.Lanes = make([]Step, len(cfg.Lanes))
		for i := range cfg.Lanes {
			l := &cfg.Lanes[i]
			p.Lanes[i] = Step{
				Start: l.Start(cfg), Rate: cfg.AdmitRatePerSecond * l.Share, Hold: base.Hold, Grace: base.Grace,
				AdmissionTTL: base.AdmissionTTL, MaxCredit: base.MaxCredit, HealthChecked: base.HealthChecked, Lane: i + 1,
				ViewUntil: base.ViewUntil,
			}
		}
	}
	return p
}
