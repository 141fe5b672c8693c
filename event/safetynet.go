package event

import (
	"fmt"
	"time"
)

// SafetyNetLife is how long a safety-net room stays on when ends_at is not
// given: it is meant to be always on, so the default end is far away.
const SafetyNetLife = 10 * 365 * 24 * time.Hour

// A safety-net room (Mode SafetyNet) sells nothing. It sits in front of a
// whole site and is always on: from starts_at (when the room is switched
// on; a past instant switches it on at once) until ends_at (default
// SafetyNetLife later). Two thresholds shape it:
//
//   - max_active (required): people holding an unexpired admission. While
//     fewer are active and nobody waits, a join — and the gate — admits at
//     once; at the threshold people queue, first come first served, and
//     are admitted as others' admissions expire.
//   - admit_rate_per_second: admissions per second, the instant ones
//     included (see admission.Frontier.Enter).
//
// So it has no stock (supply and reserve_units 0, one bucket: claims are
// refused), no shuffle window (random_window_seconds 0, and the queue
// opens at starts_at: nobody can join earlier, so W is 0 and position =
// sequence number) and one join shard.

// safetyNetDefaults fills the fields a safety-net room fixes or defaults,
// before the general defaults.
func (c *Config) safetyNetDefaults() {
	if c.PrequeueOpensAt.IsZero() {
		c.PrequeueOpensAt = c.StartsAt
	}
	if c.EndsAt.IsZero() && !c.StartsAt.IsZero() {
		c.EndsAt = c.StartsAt.Add(SafetyNetLife)
	}
}

// validateSafetyNet checks the fields a safety-net room fixes; Validate
// checks the rest as for any event.
func (c *Config) validateSafetyNet() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Supply != 0 || c.ReserveUnits != 0:
		return bad("a safety_net room sells nothing: supply and reserve_units must be 0 (or left out)")
	case c.Buckets != 1:
		return bad("a safety_net room has no stock: buckets must be 1 (or left out)")
	case c.MaxActive < 1:
		return bad("a safety_net room needs max_active (at least 1): the active people it lets through before it queues")
	case c.RandomWindowSeconds != 0:
		return bad("a safety_net room has no shuffle window: random_window_seconds must be 0")
	case !c.PrequeueOpensAt.Equal(c.StartsAt):
		return bad("a safety_net room opens when it is switched on: prequeue_opens_at must equal starts_at (or be left out)")
	case c.JoinShards != 1:
		return bad("a safety_net room has one join shard: join_shards must be 1")
	case c.WantsYourTurn():
		return bad("a safety_net room records no user per position: your_turn webhooks are for sales")
	}
	return nil
}

// IsSafetyNet reports whether c is a safety-net room.
func (c *Config) IsSafetyNet() bool { return c.Mode == SafetyNet }
