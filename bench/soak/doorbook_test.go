//go:build soak && linux

package soak

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/anteroom/anteroom/event"
)

// The door's checks (issue 35, item 7), judged as each answer arrives.
// A shopper's standing at the door is drawn at arrival (op.Door):
//
//   - "blocked": on the run's block list from before the sale was
//     created. The join refuses them 403 blocked (exactly: the join
//     script; in a sale with an eligibility list they are not on, the
//     join may say not_eligible: see checkDoor), and so does every later
//     step: a poll with a ticket from
//     before the list (forged with the deployment's secret) is 403
//     blocked too, never a 200. Never admitted, never granted a claim.
//   - "bot": sunk by the sale's rule (their user agent). An ordinary
//     waiting answer; never admitted (no state admitted, no admission
//     token), never granted a claim.
//   - "offlist": not on the sale's eligibility list. The join refuses
//     them 403 not_eligible, a filter's false positive included (the
//     soak sends some it found: door_test.go), never a 200 (but the
//     sink's, once a rule sinks their cohort: rules come before the
//     eligibility lists).
//   - "member": on it. Never refused not_eligible.
//
// Staff change the door during some sales (doorChange): people who
// joined are added to the block list, or a rule sinks a cohort of the
// crowd (op.Cohort). A list or rule change reaches people who already
// joined at their next request (event.Door, docs/api.md "The door"): the
// door is asked at every status poll and every claim, whatever the
// caller held before. So from the change on, nobody it covers is
// admitted or granted a claim (a claim granted before stays theirs, and
// an admission token issued before stays valid for an offline verifier,
// which cannot apply lists: anteroom's own claim refuses it), and a poll
// of someone it blocks is answered 403 blocked. "From the change" is
// from the 200 that answered it: a rule is saved with the sale and the
// node that answered reloaded its view before answering, the others read
// it within a tick (holdSlack); a list change reaches every node at its
// next list refresh and rebuild (listSlack); when a fault may have kept
// a node from reading Redis meanwhile (one noted from faultReach before
// the change on), event.MaxViewAge more.

// listSlack is how long after a list change answered 200 a node may
// still check with its view from before: its next refresh (a tick)
// and the rebuild of the list's filter, on a loaded machine.
const listSlack = 2 * time.Second

// doorBook is what the door's checks know of one sale's door.
type doorBook struct {
	// blockedAt and eligibleAt are when the block list and the sale's
	// eligibility list were last loaded (answered 200).
	blockedAt, eligibleAt time.Time
	changes               []doorChange
	// sinking is when staff first sent the save of a rule sinking each
	// cohort: from then on a join of the cohort may be the sink's answer,
	// whose place is a plausible one, not the caller's.
	sinking map[string]time.Time
}

// maySink reports whether o may have been answered by the sink of a rule
// staff sent for its cohort.
func (d *doorBook) maySink(o op) bool {
	at, ok := d.sinking[o.Cohort]
	return o.Cohort != "" && ok && o.At.After(at)
}

// doorChange is one change of the door during a sale, from at (when
// node answered it 200; "" for a list change, which no node applies at
// once): users added to the block list, or a rule that sinks cohort.
type doorChange struct {
	what   string // "block" or "sink"
	node   string
	at     time.Time
	users  map[string]bool
	cohort string
}

// covers reports whether c applies to the caller of o.
func (c doorChange) covers(o op) bool {
	return c.users[o.User] || c.cohort != "" && o.Cohort == c.cohort
}

func (c doorChange) String() string {
	if c.what == "block" {
		return fmt.Sprintf("added them to the block list at %s", c.at.Format("15:04:05.000"))
	}
	return fmt.Sprintf("sank cohort %s by a rule at %s (node %s answered)", c.cohort, c.at.Format("15:04:05.000"), c.node)
}

// openDoor starts the door's account of sale ev: its block list loaded
// at blocked, its eligibility list (if any) at eligible.
func (h *history) openDoor(ev string, blocked, eligible time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.sales[ev]; b != nil {
		b.door = &doorBook{blockedAt: blocked, eligibleAt: eligible, sinking: map[string]time.Time{}}
	}
}

// sinkSent records that staff are about to save a rule sinking cohort
// of sale ev.
func (h *history) sinkSent(ev, cohort string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.sales[ev]; b != nil && b.door != nil {
		if _, ok := b.door.sinking[cohort]; !ok {
			b.door.sinking[cohort] = at
		}
	}
}

// changedDoor records change c of sale ev's door.
func (h *history) changedDoor(ev string, c doorChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.sales[ev]; b != nil && b.door != nil {
		b.door.changes = append(b.door.changes, c)
	}
}

// doorSlack is how long after a door change made at `at` (answered by
// node, "" for a list) the node of o may still decide by its view from
// before; h.mu is held.
func (h *history) doorSlack(node string, at time.Time, o op) time.Duration {
	slack := listSlack
	if node != "" {
		if o.Node == node {
			return 0 // its save reloaded its view before answering
		}
		slack = holdSlack
	}
	// A fault noted up to faultReach before the change may still hold a
	// node's link (a delay lasts up to 8 s).
	if h.faultBetween(at.Add(-faultReach), o.At) {
		slack += event.MaxViewAge
	}
	return slack
}

// faultReach is how long before a door change a fault noted may still
// keep a node from reading Redis: the longest link fault (8 s) and a
// second.
const faultReach = 9 * time.Second

// inEffect reports whether a door change made at `at` by node applies
// to o: o was sent after the slack; h.mu is held.
func (h *history) inEffect(node string, at time.Time, o op) bool {
	return !at.IsZero() && o.Start.After(at.Add(h.doorSlack(node, at, o)))
}

// checkDoor checks o against its sale's door; h.mu is held.
func (h *history) checkDoor(o op, b *saleBook) {
	d := b.door
	if d == nil || o.User == "-" || o.Status == 0 {
		return
	}
	admitted := (o.Kind == "status" || o.Kind == "join") && (o.State == "admitted" || o.Token)
	granted := (o.Kind == "claim" || o.Kind == "replay") && (o.Status == http.StatusCreated || o.Status == http.StatusOK)
	refused := fmt.Sprintf("403 %s", o.Code)
	switch o.Door {
	case "blocked":
		if !h.inEffect("", d.blockedAt, o) {
			break
		}
		switch {
		case admitted:
			h.violate(o, "%s is on the block list and was admitted to sale %s (%s)", o.User, o.Sale, o.Kind)
		case granted:
			h.violate(o, "%s is on the block list and was granted claim %s in sale %s", o.User, o.ClaimID, o.Sale)
		case o.Kind == "join" && o.Status == http.StatusOK:
			h.violate(o, "%s is on the block list and joined sale %s (position %d): the join refuses 403 blocked, exactly", o.User, o.Sale, o.Pos)
		case o.Kind == "status" && o.Status == http.StatusOK:
			h.violate(o, "%s is on the block list and a status poll of sale %s answered 200 %s: every step refuses 403 blocked", o.User, o.Sale, o.State)
		case o.Status == http.StatusForbidden && o.Code != "blocked" && !(o.Kind == "join" && o.Code == "not_eligible" && !d.eligibleAt.IsZero()):
			// At the join a node's filter can only say "maybe" for an id
			// on a block list, which the join script would decide; off
			// every eligibility list, the door refuses not_eligible first
			// (door's TestCheckOrder). Elsewhere a maybe refuses: blocked.
			h.violate(o, "%s is on the block list and its %s was refused %s, want 403 blocked (block lists come first)", o.User, o.Kind, refused)
		}
	case "bot":
		switch {
		case admitted:
			h.violate(o, "sunk bot %s was admitted to sale %s (%s %d, state %q)", o.User, o.Sale, o.Kind, o.Status, o.State)
		case granted:
			h.violate(o, "sunk bot %s was granted claim %s in sale %s", o.User, o.ClaimID, o.Sale)
		}
	case "offlist":
		if !h.inEffect("", d.eligibleAt, o) {
			break
		}
		switch {
		case admitted:
			h.violate(o, "%s is not on the eligibility list of sale %s and was admitted (%s)", o.User, o.Sale, o.Kind)
		case granted:
			h.violate(o, "%s is not on the eligibility list of sale %s and was granted claim %s", o.User, o.Sale, o.ClaimID)
		case o.Kind == "join" && o.Status == http.StatusOK && !d.maySink(o):
			// A rule's sink comes before the eligibility lists: a sunk
			// join's 200 is the endless queue's.
			h.violate(o, "%s is not on the eligibility list of sale %s and joined it (position %d): the list is exact", o.User, o.Sale, o.Pos)
		case o.Kind == "join" && o.Status == http.StatusForbidden && o.Code != "not_eligible":
			h.violate(o, "%s is not on the eligibility list of sale %s and its join was refused %s, want 403 not_eligible", o.User, o.Sale, refused)
		}
	case "member":
		if o.Status == http.StatusForbidden && o.Code == "not_eligible" && h.inEffect("", d.eligibleAt, o) {
			h.violate(o, "%s is on the eligibility list of sale %s and its %s was refused 403 not_eligible", o.User, o.Sale, o.Kind)
		}
	}
	for _, c := range d.changes {
		if !c.covers(o) || !h.inEffect(c.node, c.at, o) {
			continue
		}
		switch {
		case admitted:
			h.violate(o, "%s was admitted to sale %s after staff %s", o.User, o.Sale, c)
		case granted:
			h.violate(o, "claim %s was granted to %s in sale %s after staff %s", o.ClaimID, o.User, o.Sale, c)
		case c.what == "block" && o.Kind == "status" && o.Status == http.StatusOK:
			h.violate(o, "a status poll of %s in sale %s answered 200 %s after staff %s: a list change reaches people who already joined at their next request (403 blocked)", o.User, o.Sale, o.State, c)
		}
	}
}

// blockTargets draws whom staff add to the block list during sale ev:
// up to two people admitted who have not claimed yet (the lingerers
// make them likely) and one who joined and waits, among the JSON
// shoppers (those with a cohort). Three draws from rnd whatever the
// history holds, so that the seed's later draws stay put.
// It returns them and how many people each pool held.
func (h *history) blockTargets(ev string, rnd interface{ IntN(int) int }) (targets []string, admittedPool, waitingPool int) {
	draws := [3]int{rnd.IntN(1 << 20), rnd.IntN(1 << 20), rnd.IntN(1 << 20)}
	admitted, waiting := h.blockPools(ev)
	var out []string
	for i, pool := range [][]string{admitted, slices.Clone(admitted), waiting} {
		pool = slices.DeleteFunc(pool, func(u string) bool { return slices.Contains(out, u) })
		if len(pool) > 0 {
			out = append(out, pool[draws[i]%len(pool)])
		}
	}
	return out, len(admitted), len(waiting)
}

// blockPools are the JSON shoppers of sale ev (those with a cohort)
// admitted who have not claimed, and those who joined and wait, sorted.
func (h *history) blockPools(ev string) (admitted, waiting []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.sales[ev]
	if b == nil {
		return nil, nil
	}
	claimed := map[string]bool{}
	for k := range b.byKey {
		claimed[userOfKey(k)] = true
	}
	for u := range b.cohort {
		_, got := b.tokenAt[u]
		switch {
		case got && !claimed[u]:
			admitted = append(admitted, u)
		case !got && b.userPos[u] > 0:
			waiting = append(waiting, u)
		}
	}
	slices.Sort(admitted)
	slices.Sort(waiting)
	return admitted, waiting
}

// userOfKey is the user of a byKey key, "user/key".
func userOfKey(k string) string {
	for i := range len(k) {
		if k[i] == '/' {
			return k[:i]
		}
	}
	return k
}

// doorTally counts the door's answers for the verdict line: refusals
// 403 blocked and not_eligible, sunk bots' joins answered, and the
// door changes staff made during sales.
func (h *history) doorTally() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	blocked, notEligible, sunk, fps := map[string]int{}, 0, 0, 0
	for _, o := range h.ops {
		switch {
		case o.Status == http.StatusForbidden && o.Code == "blocked":
			blocked[o.Kind]++
		case o.Status == http.StatusForbidden && o.Code == "not_eligible":
			notEligible++
			if o.Note == falsePositiveNote {
				fps++
			}
		case o.Door == "bot" && o.Kind == "join" && o.Status == http.StatusOK:
			sunk++
		}
	}
	changes := 0
	for _, b := range h.sales {
		if b.door != nil {
			changes += len(b.door.changes)
		}
	}
	return fmt.Sprintf("door: 403 blocked %d (join %d, status %d, claim %d), 403 not_eligible %d (%d of them a filter's false positive), %d bots' joins sunk, %d door changes during sales",
		blocked["join"]+blocked["status"]+blocked["claim"]+blocked["replay"]+blocked["bjoin"], blocked["join"], blocked["status"], blocked["claim"]+blocked["replay"],
		notEligible, fps, sunk, changes)
}
