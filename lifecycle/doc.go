// Package lifecycle publishes a sale's lifecycle events — sale opened,
// shuffle window closed (with the revealed seed), admission paused and
// resumed, the room closed and reopened by staff, sold out, sale ended, "your turn" for each admitted person, and
// a safety-net room's queueing started and stopped, and each claim staff
// cancelled (order_cancelled, cancelled.go) —
// on JetStream, and delivers them to the sale's webhooks.
//
// Exactly once, leaderless. Every node observes every sale on its tick and
// hands what it sees to one Redis script (record.lua), which claims each
// transition once for all nodes (HSETNX for one-shot transitions, the
// newest config version for a staff pause/resume and for a staff closure
// (closed/reopened), the newest config
// version and health generation for a shop health hold — both emit
// paused/resumed, with data.reason "staff" or "health" —, a
// compare-and-set cursor for
// admitted positions) and writes the event into a per-sale outbox in the
// same step. Any node publishes the outbox with Nats-Msg-Id = the event id
// and removes what JetStream acknowledged, so a node that dies between the
// script and the publish loses nothing, and two nodes publishing the same
// entry within JetStream's duplicate window (DuplicateWindow) store it
// once. A node stalled past the window between reading the outbox and
// publishing stores a copy again: the stream holds each event at least
// once, and the Deliverer calls a webhook that answered an id no more for
// that id (a Redis marker kept 7 days).
//
// "Your turn". Each queue of a sale — the default lane and every lane —
// admits positions up to its own frontier, and has its own cursor. A
// position maps to the place holding it through the window's permutation
// (the lane's own, for a lane), or for a sale of join shards through the
// node's view of the global order (queue.Order.Locate: shard and seq); a
// place to its user through a hash (seq → user, on the join shard's slot
// for a sharded queue) that Joiner keeps only for sales with a webhook
// asking for your_turn: one HSET per join, about 50 bytes per joiner.
// Events carry the position within the queue, the seq, the lane (a lane
// member) or shard (a sharded sale) and, when known, the user. The event id
// is <sale>.your_turn.<queue.Laned(lane, position)>: one per admitted
// person. your_turn events are recorded for sales with such a webhook and
// for sales where someone subscribed to a Web Push notice (WithPush).
//
// Webhooks. A Deliverer on every node shares one durable JetStream consumer:
// each event is POSTed, signed (Signature), to every webhook of the sale
// that wants its type, at least once, retried with exponential backoff;
// X-Anteroom-Event-Id is the same on every attempt, for receivers to
// dedupe. Delivery runs on its own goroutines and never touches joins,
// status or claims.
package lifecycle

// Event types, as in event.LifecycleTypes.
const (
	SaleOpened   = "sale_opened"
	WindowClosed = "window_closed"
	Paused       = "paused"
	Resumed      = "resumed"
	// RoomClosed and Reopened: staff closed the room (event.Closure) and
	// reopened it; data.version is the configuration's.
	RoomClosed = "closed"
	Reopened   = "reopened"
	SoldOut    = "sold_out"
	SaleEnded  = "sale_ended"
	YourTurn   = "your_turn"
	// QueueingStarted and QueueingStopped: a safety-net room started
	// queueing (someone waits: the room is at its thresholds) and
	// stopped (nobody has waited for QueueingQuiet).
	QueueingStarted = "queueing_started"
	QueueingStopped = "queueing_stopped"
)

// Event is one lifecycle event as published and delivered.
type Event struct {
	// ID is unique per event and transition: <sale>.<type>.<n>.
	ID string `json:"id"`
	// Type is one of the event types above.
	Type string `json:"type"`
	// Event is the sale's id.
	Event string `json:"event"`
	// AtUnixMs is Redis TIME when the transition was recorded.
	AtUnixMs int64 `json:"at_unix_ms"`
	// Data carries the type's fields (seed, window_size; position, seq,
	// user; version).
	Data map[string]any `json:"data"`
}
