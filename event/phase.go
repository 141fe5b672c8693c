package event

import (
	"errors"
	"fmt"
	"time"
)

// Phase is the public state of a sale.
type Phase string

// Phases in the order a sale goes through them.
const (
	Upcoming Phase = "upcoming"
	Prequeue Phase = "prequeue"
	Open     Phase = "open"
	SoldOut  Phase = "sold_out"
	Closed   Phase = "closed"
)

// PhaseAt returns the phase of the sale at now. soldOut is the stock state
// known to the caller.
func (c *Config) PhaseAt(now time.Time, soldOut bool) Phase {
	switch {
	case now.Before(c.PrequeueOpensAt):
		return Upcoming
	case !now.Before(c.EndsAt):
		return Closed
	case soldOut:
		return SoldOut
	case now.Before(c.StartsAt):
		return Prequeue
	case c.Mode == Lottery:
		// Registration is over; the draw is being admitted.
		return Open
	default:
		return Open
	}
}

// WindowClosed reports whether the window size is frozen at now.
func (c *Config) WindowClosed(now time.Time) bool { return !now.Before(c.WindowEnd()) }

// ErrLocked wraps every refused change to a field that can no longer change.
var ErrLocked = errors.New("event: configuration locked")

// CheckUpdate reports whether an existing sale old may become next at now.
// Mode and window are locked once the window has closed (fairness: the draw
// is fixed); supply, reserve and buckets once the sale has started (stock
// is live); the opening time once it has passed.
func CheckUpdate(old, next *Config, now time.Time) error {
	locked := func(field, why string) error {
		return fmt.Errorf("%w: %s cannot change %s", ErrLocked, field, why)
	}
	if old.WindowClosed(now) {
		if next.Mode != old.Mode {
			return locked("mode", "after the window has closed")
		}
		if next.RandomWindowSeconds != old.RandomWindowSeconds || !next.StartsAt.Equal(old.StartsAt) {
			return locked("the window (random_window_seconds, starts_at)", "after it has closed")
		}
	}
	if !now.Before(old.StartsAt) {
		if next.Supply != old.Supply || next.ReserveUnits != old.ReserveUnits || next.Buckets != old.Buckets {
			return locked("supply, reserve_units and buckets", "after the sale has started")
		}
		if !next.StartsAt.Equal(old.StartsAt) {
			return locked("starts_at", "after the sale has started")
		}
	}
	if !now.Before(old.PrequeueOpensAt) && !next.PrequeueOpensAt.Equal(old.PrequeueOpensAt) {
		return locked("prequeue_opens_at", "after the queue has opened")
	}
	return nil
}

// StockChanged reports whether next needs the stock buckets laid out again.
func StockChanged(old, next *Config) bool {
	return old.Supply != next.Supply || old.ReserveUnits != next.ReserveUnits || old.Buckets != next.Buckets
}
