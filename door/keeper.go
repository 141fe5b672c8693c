package door

import "github.com/anteroom/anteroom/event"

// Door applies the order of checks of the package comment to a request,
// from the node's views of the lists and the compiled rules. Its zero
// value, and a nil *Door, let everyone queue. It is safe for concurrent
// use as its views are.
type Door struct {
	lists Lists
	rules Rules
}

// New returns the door over the node's lists and rules; either may be nil
// (no lists: every list is empty; no rules: none matches).
func New(lists Lists, rules Rules) *Door {
	return &Door{lists: lists, rules: rules}
}

// Applies reports whether sale cfg has anything for the door to check: a
// rule or a list. A request to a sale without one is never looked at,
// so a caller builds no Request for it (the status poll's hot path).
func (d *Door) Applies(cfg *event.Config) bool {
	return d != nil && (len(cfg.Door.Rules) > 0 || len(cfg.Door.BlockLists) > 0 || len(cfg.Door.EligibleLists) > 0)
}

// Hash is user's keyed hash, the entry of the lists' exact copies (0
// without a view of the lists).
func (d *Door) Hash(user string) uint64 {
	if d == nil || d.lists == nil {
		return 0
	}
	return d.lists.Hash(user)
}

// Check decides request r to sale cfg at step, in the order of the
// package comment: block lists, then rules, then eligibility lists.
//
// A block list's "maybe" refuses (Block) except at Join for a request the
// rules leave to the queue (or a challenge), where it is left to the join
// script (Verdict.Exact.Block). An eligibility list's "maybe" lets the
// request on at every step but Join and Room, where the join script, or
// the room's entrance script, decides (Verdict.Exact.Eligible): the way
// in was exact, and a list change that takes someone off reaches them
// through the filter's Absent. Networks are exact. A list the node does
// not hold (Unknown) is a "maybe" when it is a list of ids; a list of
// networks, or any list before the node read one, refuses as a block
// list at every step and counts as not on it at Join and Room as an
// eligibility list. It reads only memory; a sale without rules or lists
// returns Queue at once, without allocating.
func (d *Door) Check(cfg *event.Config, r *Request, step Step) Verdict {
	if !d.Applies(cfg) {
		return Verdict{}
	}
	dc := &cfg.Door
	var maybe []string // block lists the join script decides
	for _, list := range dc.BlockLists {
		switch d.member(list, r) {
		case Present, unheld:
			return Verdict{Action: Block}
		case Maybe, Unknown:
			if step != Join {
				return Verdict{Action: Block}
			}
			maybe = append(maybe, list)
		}
	}
	v := Verdict{Action: Queue}
	if d.rules != nil && len(dc.Rules) > 0 {
		if name, then, ok := d.rules.Match(cfg, r); ok {
			v.Action, v.Rule = then, name
		}
	}
	switch v.Action {
	case Queue, Challenge:
	case Block, NotEligible:
		return v
	default: // Bypass, Sink: no join script decides a "maybe" for them
		if len(maybe) > 0 {
			return Verdict{Action: Block}
		}
		return v
	}
	v.Exact.Block = maybe
	if len(dc.EligibleLists) == 0 {
		return v
	}
	var candidates []string
	for _, list := range dc.EligibleLists {
		switch d.member(list, r) {
		case Present:
			return v
		case Maybe, Unknown:
			candidates = append(candidates, list)
		case unheld:
			if step != Join && step != Room {
				return v // their way in was exact
			}
		}
	}
	switch {
	case len(candidates) == 0:
		return Verdict{Action: NotEligible, Rule: v.Rule}
	case step == Join, step == Room:
		v.Exact.Eligible = candidates
	}
	return v
}

// unheld is member's answer for a list the node does not hold and whose
// exact copy in the queue's slot cannot decide either: a list of
// networks (it has none), or any list while the node has read none (its
// kind is unknown), or one the request names no address to tell by.
const unheld Membership = 255

// member is r's caller's place on list: its network (exact), then its
// user id (the filter's Absent or Maybe). Unknown is a list of ids the
// node does not hold (its join script's copy decides); unheld, one no
// copy decides.
func (d *Door) member(list string, r *Request) Membership {
	if d.lists == nil {
		return Absent
	}
	asked := r.Addr.IsValid()
	if asked {
		switch d.lists.Addr(list, r.Addr.Unmap()) {
		case Present:
			return Present
		case Unknown:
			return unheld
		}
	}
	if r.User == "" {
		return Absent
	}
	m := d.lists.User(list, r.User)
	if m == Unknown && !asked {
		return unheld // a list of networks, or of ids: no address tells
	}
	return m
}
