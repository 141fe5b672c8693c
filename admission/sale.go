package admission

import (
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// Sale is one node's view of one event, refreshed on every tick (package
// sale keeps it). Values are immutable once published: readers may keep
// them.
type Sale struct {
	Config event.Config
	// ConfigAt is the Redis TIME at which Config was read (Store.GetAt):
	// joins and frontier steps act on it until event.MaxViewAge after.
	ConfigAt time.Time
	Reading
	// Perm orders the window once it is frozen (Window > 0).
	Perm queue.Permutation
	// Order is the view of a queue of join shards (JoinShards > 1), nil
	// for a queue on one slot.
	Order *queue.Order
	// Remaining is the stock left for sale.
	Remaining int64
	// BucketStock is the stock left in each of the event's buckets; the
	// claim step picks donor buckets from it.
	BucketStock []int64
	// SoldOut is true once Remaining reached zero.
	SoldOut bool
	// Rate is the measured admission rate (positions per second), smoothed.
	Rate float64
	// Pace is the default lane's measured pace, for its ETA (see ETA).
	Pace Pace
	// Refreshed is the node's clock when the view was taken.
	Refreshed time.Time
	// Stale, in a safety-net room, is a position at or below which every
	// admission is older than the admission TTL plus the grace: status no
	// longer hands those positions a token (they left; they join again).
	// The node learns it from its own ticks (TrackStale), so it is 0 for
	// that long after a node starts.
	Stale int64
	// marks are the samples Stale is taken from (safety-net rooms only).
	marks []mark
	// Lanes are the views of the event's lanes, in the order of
	// Config.Lanes (lane index i+1); nil without lanes.
	Lanes []LaneView
	// HeldBehind is true while the node has not read the whole held log
	// (see Reading.HeldLog).
	HeldBehind bool
}

// LaneView is one node's view of one lane of an event (see event.Lane).
type LaneView struct {
	Reading
	// Perm orders the lane's window once it is frozen (Window > 0).
	Perm queue.Permutation
	// Rate is the lane's admission rate: its share of admit_rate.
	Rate float64
	// Pace is the lane's measured pace, for its ETA (see ETA).
	Pace Pace
}
