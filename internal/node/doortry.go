package node

import (
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// tryDoor answers the console's tester (staffapi's TryRules): what the
// door would decide for a described request to sale cfg, at the gate —
// block lists, then cfg's rules (compiled afresh: they may not be saved
// yet; a rule that does not compile is the error), then eligibility
// lists — over this node's view of the lists. A user id's filter cannot
// tell a member from one of its false positives (once in 65,536), so a
// user on a block list is blocked and one on an eligibility list let on,
// as the gate does; the join decides them exactly.
func (w *wiring) tryDoor(cfg *event.Config, r *door.Request) (rule string, then door.Action, matched bool, err error) {
	name, act, ok, err := w.rules.Try(cfg, r)
	if err != nil {
		return "", door.Queue, false, err
	}
	var l door.Lists = w.listView
	if w.cfg.DoorLists != nil {
		l = w.cfg.DoorLists
	}
	v := door.New(l, tried{name: name, then: act, ok: ok}).Check(cfg, r, door.Gate)
	return v.Rule, v.Action, v.Rule != "", nil
}

// tried is a door.Rules whose decision was made already (by Try).
type tried struct {
	name string
	then door.Action
	ok   bool
}

// Match returns the decision made.
func (t tried) Match(*event.Config, *door.Request) (string, door.Action, bool) {
	return t.name, t.then, t.ok
}
