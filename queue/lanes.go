package queue

import "strconv"

// Lanes. An event's lane (event.Lane) is a queue of its own on the event's
// hash tag: its keys are the event's with "l:<index>:" inserted, so a lane
// has its own sequence counter, user entries and frozen window, and
// join.lua runs on them unchanged. Lanes are named by their index in the
// event's configuration (which locks once the queue opens); index 0 is
// the default lane, whose keys are the event's own.
//
// Tickets and admission tokens carry a lane member's number as one
// integer, Laned(lane, n) = lane × 2^40 + n: a queue of one lane never
// nears 2^40 people, and the default lane's numbers are unchanged.

// laneShift leaves 40 bits for a number within a lane.
const laneShift = 40

// MaxLaneNumber is the largest sequence number or position within a lane.
const MaxLaneNumber = 1<<laneShift - 1

// Laned returns n of lane as one integer (n itself for lane 0).
func Laned(lane int, n int64) int64 { return int64(lane)<<laneShift | n }

// Unlane splits an integer made by Laned into the lane and n.
func Unlane(v int64) (lane int, n int64) { return int(v >> laneShift), v & MaxLaneNumber }

// LaneTag is the key prefix of lane of event ev: "ar:{<ev>}:" for the
// default lane 0, "ar:{<ev>}:l:<lane>:" for the others. Every key of a
// lane (queue, frontier, presence, ...) is this prefix and the name the
// event's own key has after "ar:{<ev>}:"; other packages build lane keys
// with it, never by hand.
func LaneTag(ev string, lane int) string {
	if lane == 0 {
		return "ar:{" + ev + "}:"
	}
	return "ar:{" + ev + "}:l:" + strconv.Itoa(lane) + ":"
}

// KeysForLane returns the queue keys of lane of event ev (KeysFor for
// lane 0).
func KeysForLane(ev string, lane int) Keys {
	t := LaneTag(ev, lane)
	return Keys{Seq: t + "seq", Window: t + "w", Fence: fenceKey(t)}
}
