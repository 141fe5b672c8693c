// Package door owns who may come into a sale or a safety-net room, and on
// what evidence: block lists, eligibility lists and the sale's rules. Join,
// status, the gate, safety-net rooms and claim ask it (Door.Check); none
// re-implements a piece of it.
//
// The order of checks, for one request to one sale:
//
//  1. Block lists (event.Door.BlockLists): a caller whose user id or
//     client network is on one is refused, 403 blocked, whatever a rule
//     says. A list's node filter can answer "maybe" (package door/lists):
//     at the join the join script then decides exactly (Verdict.Exact);
//     elsewhere a "maybe" refuses (a filter errs only toward refusing),
//     and so at the join for a request a rule bypasses or sinks, which no
//     join script decides. A list the node does not hold (Unknown: its
//     first read of the lists failed, or the list's build failed or is
//     still running) is never taken for "not on it": at the join a list
//     of ids goes to the join script as a "maybe" does; a list of
//     networks (which has no copy in the queue's slot), or any list
//     while the node has read none (it cannot tell their kinds), refuses
//     at every step, and so does every step after the join. We chose to
//     refuse rather than ask Redis for the exact answer: the checks read
//     memory only and take no context, a network has no one-key exact
//     lookup, and the case is short and rare. A node reports not ready
//     until its first read of every list succeeds (so a load balancer
//     sends it nothing meanwhile); afterwards a list is unheld only
//     while its first build runs (seconds at 10 million entries: a list
//     a sale names within a tick of its creation) or after a failed
//     build, which the next tick retries. A list whose Version changed
//     answers from its previous build while the new one runs; should the
//     new one fail, the previous is dropped (Unknown) until one succeeds.
//  2. Rules (event.Door.Rules), in order: the first whose `when` holds
//     decides with its `then`: queue, bypass, block, challenge or sink.
//     None matching is queue. A rule whose outcome depends on a list
//     the node does not hold (in_list, package door/rules) holds when
//     its then refuses or queues and does not when it bypasses.
//  3. Eligibility lists (event.Door.EligibleLists), for a request the
//     rules left to the queue (or sent to a challenge): a caller on none
//     of them is refused, 403 not_eligible with the sale's message. At
//     the join a filter's "maybe", or a list of ids the node does not
//     hold, is decided exactly by the join script, and at a safety-net
//     room's join (and its gate's admit-at-once) by the room's entrance
//     script (Step Room); a list of networks it does not hold counts as
//     not on it there (errs toward refusing). Elsewhere either lets the
//     caller on (their way in was exact).
//
// A join the rate limits refused for its address alone (over the sale's
// per-IP budget: a carrier NAT is many people) is asked again with
// Request.Busy set, when a rule may challenge it (BusyChallenges): a
// Challenge then turns its 429 into the sale's challenge, and a solved
// challenge joins under a ceiling of its own (web/protect's JoinBusy).
//
// A sink is an endless queue: the caller sees an ordinary wait that never
// comes up. Checks read only the node's memory (filters, the network
// table, compiled rules): the door adds no Redis round trip to a request.
package door

import (
	"net/netip"
	"time"

	"github.com/anteroom/anteroom/event"
)

// Action is what the door decides for a request.
type Action uint8

// The actions, in the order a Verdict reports them.
const (
	// Queue is the default: the sale's own queue and rules of admission.
	Queue Action = iota
	// Bypass is never queued (health checks, static assets, a partner's
	// servers).
	Bypass
	// Block refuses: 403 blocked.
	Block
	// Challenge asks for a proof of work or a captcha before the join.
	Challenge
	// Sink sends the caller to an endless queue.
	Sink
	// NotEligible refuses a caller on none of the sale's eligibility
	// lists: 403 not_eligible.
	NotEligible
)

// String is the action's name as staff write it in a rule's `then`.
func (a Action) String() string {
	switch a {
	case Queue:
		return "queue"
	case Bypass:
		return "bypass"
	case Block:
		return "block"
	case Challenge:
		return "challenge"
	case Sink:
		return "sink"
	case NotEligible:
		return "not_eligible"
	}
	return "unknown"
}

// Request is what the door sees of one request.
type Request struct {
	// Method, Host, Path and Query are the request line's (Query without
	// its '?').
	Method, Host, Path, Query string
	// Addr is the client's address (behind trusted proxies, the one they
	// name).
	Addr netip.Addr
	// User is the caller's user id; "" where the request names none.
	User string
	// Claims are the caller's identity-token claims (jwt identity mode)
	// the step read already.
	Claims map[string][]string
	// Claim reads a claim of the caller's identity token that Claims
	// lacks (the token verified again, and naming User), and whether the
	// token carries it; nil reads none.
	Claim func(name string) ([]string, bool)
	// Signal reports whether the request carries the sale's signal name
	// (device, payment, phone, address) from the sale's trusted source
	// for it: from a trusted proxy, signed by the shop for this sale and
	// user, or in the identity token. Nil: none.
	Signal func(name string) bool
	// Header and Cookie read a request header and a cookie by name ("" if
	// absent); nil reads none.
	Header, Cookie func(name string) string
	// Now is the request's instant on the node's clock.
	Now time.Time
	// Busy is true when the caller's address is over the sale's per-IP
	// join budget: only at a join the rate limits refused for that
	// alone, which asks the door again with Busy set (the rule function
	// busy_network(); BusyChallenges). Every other request leaves it false.
	Busy bool
}

// Membership is what a node knows of a value's place on a list.
type Membership uint8

// The answers of Lists.
const (
	// Absent: certainly not on the list.
	Absent Membership = iota
	// Maybe: the node's filter cannot tell (a member, or one of its false
	// positives); the join script's exact copy can.
	Maybe
	// Present: certainly on the list.
	Present
	// Unknown: the node does not hold the list (yet): its first read of
	// the lists failed, or the list's build failed or has not finished.
	// Never "not on it": a block list refuses (or, at the join, is left
	// to the join script's exact copy when the list is of ids), an
	// eligibility list is left to the join script at the join and lets
	// the caller on afterwards.
	Unknown
)

// Lists is the node's view of the lists (package door/lists): compact
// filters of user ids (and device ids and payment fingerprints), exact
// tables of networks, refreshed within a tick of a change.
type Lists interface {
	// User answers whether user is on list name: Absent or Maybe for a
	// list of ids; Absent for a list of another kind or one that does
	// not exist; Unknown for a list of ids the node does not hold (yet),
	// and for every list while the node has read none.
	User(list, user string) Membership
	// Addr answers whether addr is in one of list name's networks:
	// Absent or Present (exact); Absent for a list of another kind or
	// one that does not exist; Unknown for a list of networks the node
	// does not hold (yet), and for every list while the node has read
	// none.
	Addr(list string, addr netip.Addr) Membership
	// Hash is user's keyed hash, the entry the lists' exact copies hold
	// (package door/lists' layout): the join script's argument.
	Hash(user string) uint64
}

// Crawlers verifies search-engine crawlers by their address (package
// door/crawler): the rule function verified_crawler. It must not block:
// an address not known yet answers false and is looked up meanwhile.
type Crawlers interface {
	Verified(addr netip.Addr) bool
}

// Rules are the sales' compiled rules (package door/rules).
type Rules interface {
	// Match returns the first of cfg.Door.Rules whose `when` holds for r:
	// its name and its `then`; ok is false when none holds (a rule whose
	// evaluation fails does not hold).
	Match(cfg *event.Config, r *Request) (name string, then Action, ok bool)
}
