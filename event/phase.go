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

// Node views lag the store: a node serves joins and steps the frontier from
// its view of the configuration, read on its last tick. Two bounds keep a
// view that a save has overtaken from acting on what the store no longer
// says (freezing a window at an end it no longer has, opening a queue
// layout it no longer has):
//
//   - MaxViewAge: a view acts (a join, a frontier step, a shard read) only
//     until Redis TIME is MaxViewAge past the read of its configuration
//     (Store.GetAt); the scripts refuse it after that.
//   - LockMargin: the changes a view acts on at an instant — the window
//     (mode, random_window_seconds, starts_at), the opening, join_shards
//     and the lanes' shape — lock LockMargin before that instant.
//
// So a view read before a save acts at the latest MaxViewAge after it,
// still LockMargin − MaxViewAge (the slack for clock differences between
// Redis servers) before the instant the save moved.
const (
	MaxViewAge = 5 * time.Second
	LockMargin = 10 * time.Second
)

// lockRule is one group of fields that can no longer change from an instant
// on.
type lockRule struct {
	changed bool
	from    time.Time
	what    string
}

// lockRules lists the locks a change from old to next touches. The shuffle
// window (mode, random_window_seconds, starts_at) locks LockMargin before
// it starts — before starts_at — and a change that would close it within
// LockMargin (its new end that close or passed) is refused too: positions
// drawn are never redrawn and a window is never cut short. Supply,
// reserve_units and buckets lock at starts_at (stock is live); the opening
// time, join_shards and the lanes' shape LockMargin before the queue opens
// (nobody can join before: the first join comes after).
func lockRules(old, next *Config) []lockRule {
	window := next.Mode != old.Mode || next.RandomWindowSeconds != old.RandomWindowSeconds || !next.StartsAt.Equal(old.StartsAt)
	opens := old.PrequeueOpensAt.Add(-LockMargin)
	return []lockRule{
		{window, old.StartsAt.Add(-LockMargin), "mode and the window (random_window_seconds, starts_at) cannot change from 10 s before the sale starts"},
		{window, next.WindowEnd().Add(-LockMargin), "this change would close the window within 10 s"},
		{StockChanged(old, next), old.StartsAt, "supply, reserve_units and buckets cannot change after the sale has started"},
		{!next.PrequeueOpensAt.Equal(old.PrequeueOpensAt), opens, "prequeue_opens_at cannot change from 10 s before the queue opens"},
		{next.JoinShards != old.JoinShards, opens, "join_shards cannot change from 10 s before the queue opens"},
		{lanesShape(old.Lanes, next.Lanes), opens, "the lanes' names, order and starts cannot change from 10 s before the queue opens"},
	}
}

// LockAt returns the instant from which the change from old to next is
// refused, or the zero time when it is allowed at any time. Store.PutBefore
// compares it with Redis TIME in the same step as the save, so no node's
// clock decides a lock.
func LockAt(old, next *Config) time.Time {
	var at time.Time
	for _, r := range lockRules(old, next) {
		if r.changed && (at.IsZero() || r.from.Before(at)) {
			at = r.from
		}
	}
	return at
}

// CheckUpdate reports whether an existing sale old may become next at now,
// with an error wrapping ErrLocked that names the locked fields.
func CheckUpdate(old, next *Config, now time.Time) error {
	for _, r := range lockRules(old, next) {
		if r.changed && !now.Before(r.from) {
			return fmt.Errorf("%w: %s", ErrLocked, r.what)
		}
	}
	return nil
}

// StockChanged reports whether next needs the stock buckets laid out again.
func StockChanged(old, next *Config) bool {
	return old.Supply != next.Supply || old.ReserveUnits != next.ReserveUnits || old.Buckets != next.Buckets
}
