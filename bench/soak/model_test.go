//go:build soak && linux

package soak

import (
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The claim service as porcupine sees it (issue 28): a sequential
// specification that knows nothing of Redis, Lua or the nodes, and a
// search for an order of the operations, each placed between its call and
// its answer, that explains every answer. The state of one sale is the
// claims granted (claim id → user, state, earliest grant instant) and the
// Idempotency-Keys answered (user/key → claim id).
//
//   - claim answered 201/200 with id c for user u and key k: if k was
//     answered before, c must be that claim (a replay, a twin, a retry).
//     Otherwise c is new: u must hold fewer than the limit and the sale
//     fewer than its supply, counting the claims pending or confirmed that
//     cannot have expired by the answer; c is then pending.
//   - release answered 200: the claim must not be confirmed; it is released.
//   - lookup answered 200 "confirmed": the claim must not be released (or
//     expired: a lookup shows an expiry as "released"); it is confirmed.
//     "released": it must not be confirmed; it is released. "cancelled":
//     it must be cancelled.
//   - cancel (staff, issue 36) answered 200: the claim must be pending or
//     confirmed — a released claim, or one cancelled before, is never
//     cancelled (exactly one cancellation, so one order_cancelled event,
//     per claim); it is cancelled, and its unit returned (restock) or
//     kept sold and void. A cancelled claim still counts against its
//     user's limit; against the supply only when not restocked: granted
//     − released − cancelled-and-returned ≤ supply. It is never released
//     or confirmed after. An ambiguous cancel is placed like an ambiguous
//     release.
//
// Confirmation (the order worker) and expiry (the claim TTL) are no
// client's operations: a lookup is where the model learns of a
// confirmation, and a claim whose grant was called a TTL (less a second
// for the node's instant) before an operation's answer may have expired
// by then, so it no longer counts against supply or limit. Every other
// answer (409 limit, 410 sold out, 404, a release refused) is accepted
// and changes nothing: the model checks the promises the issue names, not
// every refusal.
//
// Ambiguous answers (a transport error, a cut body, any 5xx: the server
// may have acted) are "may have happened": an ambiguous release is given
// a return time at the end of the history (porcupine may place it
// anywhere after its call, the end included, where it explains nothing)
// and releases a pending claim where it is placed. An ambiguous claim is
// left out: what it may have done is grant a claim id no client was told,
// and the only way a client learns that id is a later 201/200 for the
// same key, which the model takes as the grant; a grant the model never
// learns of only leaves it counting one unit fewer (it errs towards Ok).
//
// The supply an operation is held to is the one the history held the
// sale to when it was answered (staff edits included, see
// history.setSupply); the limit and claim TTL are the sale's.

// mInput is an operation's call: what was asked, and what the model needs
// to judge it (the sale's supply, limit and claim TTL then, and the
// operation's call and answer instants for expiry).
type mInput struct {
	Kind         string // claim, release, lookup, cancel
	User, Key    string
	Restock      bool   // a cancel's choice
	ClaimID      string // of a release or lookup
	Supply       int64
	Limit        int64
	TTL          time.Duration
	Call, Return int64 // UnixNano
}

// mOutput is an operation's answer.
type mOutput struct {
	Unknown bool // no answer, or a 5xx: the server may have acted
	Status  int
	Code    string
	ClaimID string
	State   string
}

// Claim states.
const (
	cPending byte = iota
	cConfirmed
	cReleased
	cCancelledVoid     // cancelled, its unit kept sold and void
	cCancelledReturned // cancelled, its unit back in stock
)

// cancelledState is the state a cancel with restock leaves.
func cancelledState(restock bool) byte {
	if restock {
		return cCancelledReturned
	}
	return cCancelledVoid
}

// mClaim is one granted claim.
type mClaim struct {
	user  string
	state byte
	call  int64 // the granting operation's call: the earliest grant instant
}

// mState is one sale's state. It is never mutated: Step copies it.
type mState struct {
	claims map[string]mClaim
	keys   map[string]string
	hash   uint64 // sum of the entries' hashes, order-free
}

func entryHash(parts ...string) uint64 {
	f := fnv.New64a()
	for _, p := range parts {
		f.Write([]byte(p))
		f.Write([]byte{0})
	}
	return f.Sum64()
}

func claimHash(id string, c mClaim) uint64 {
	return entryHash("c", id, c.user, string(rune('0'+c.state)), fmt.Sprint(c.call))
}

func (s mState) with(id string, c mClaim) mState {
	n := mState{claims: maps.Clone(s.claims), keys: s.keys, hash: s.hash}
	if old, ok := s.claims[id]; ok {
		n.hash -= claimHash(id, old)
	}
	n.claims[id] = c
	n.hash += claimHash(id, c)
	return n
}

func (s mState) withKey(k, id string) mState {
	n := mState{claims: s.claims, keys: maps.Clone(s.keys), hash: s.hash}
	n.keys[k] = id
	n.hash += entryHash("k", k, id)
	return n
}

// held counts the claims (of user u, or all for "") that hold a unit and
// cannot have expired by instant at.
func (s mState) held(u string, in mInput) int64 {
	var n int64
	for _, c := range s.claims {
		if c.state == cReleased || (u != "" && c.user != u) || (u == "" && c.state == cCancelledReturned) {
			continue // a cancelled claim keeps its user's slot
		}
		if c.state == cPending && in.TTL > 0 && in.Return-c.call >= int64(in.TTL-time.Second) {
			continue // may have expired
		}
		n++
	}
	return n
}

func claimStep(state, input, output any) (bool, any) {
	s, in, out := state.(mState), input.(mInput), output.(mOutput)
	switch in.Kind {
	case "claim":
		if out.Unknown || (out.Status != http.StatusCreated && out.Status != http.StatusOK) {
			return true, s
		}
		k := in.User + "/" + in.Key
		if id, ok := s.keys[k]; ok {
			return id == out.ClaimID, s
		}
		if _, ok := s.claims[out.ClaimID]; ok {
			return false, s // one claim id answered for two keys
		}
		if s.held(in.User, in) >= in.Limit || s.held("", in) >= in.Supply {
			return false, s
		}
		return true, s.with(out.ClaimID, mClaim{user: in.User, state: cPending, call: in.Call}).withKey(k, out.ClaimID)
	case "release":
		c, ok := s.claims[in.ClaimID]
		switch {
		case !ok: // granted by an answer no client saw
			return true, s
		case out.Unknown:
			if c.state == cPending {
				c.state = cReleased
				return true, s.with(in.ClaimID, c)
			}
			return true, s
		case out.Status != http.StatusOK:
			return true, s
		case c.state != cPending && c.state != cReleased:
			return false, s // confirmed or cancelled
		}
		c.state = cReleased
		return true, s.with(in.ClaimID, c)
	case "cancel":
		c, ok := s.claims[in.ClaimID]
		switch {
		case !ok:
			return true, s
		case out.Unknown:
			if c.state == cPending || c.state == cConfirmed {
				c.state = cancelledState(in.Restock)
				return true, s.with(in.ClaimID, c)
			}
			return true, s
		case out.Status != http.StatusOK:
			return true, s
		case c.state != cPending && c.state != cConfirmed:
			return false, s // released, or cancelled before
		}
		c.state = cancelledState(in.Restock)
		return true, s.with(in.ClaimID, c)
	case "lookup":
		c, ok := s.claims[in.ClaimID]
		if !ok || out.Unknown || out.Status != http.StatusOK {
			return true, s
		}
		switch out.State {
		case "confirmed":
			if c.state != cPending && c.state != cConfirmed {
				return false, s
			}
			c.state = cConfirmed
		case "released":
			if c.state != cPending && c.state != cReleased {
				return false, s
			}
			c.state = cReleased
		case "cancelled":
			return c.state == cCancelledVoid || c.state == cCancelledReturned, s
		default:
			return true, s
		}
		return true, s.with(in.ClaimID, c)
	}
	return true, s
}

// claimModel is the claim service's model. Its partitions are the sale's
// stock (every claim and release: supply is shared by all) and each
// user's account (their claims, releases and lookups: keys, limit,
// release/confirm); each is checked on its own.
var claimModel = porcupine.Model{
	Partition: partitionClaims,
	Init: func() any {
		return mState{claims: map[string]mClaim{}, keys: map[string]string{}}
	},
	Step: claimStep,
	Hash: func(state any) uint64 { return state.(mState).hash },
	Equal: func(a, b any) bool {
		x, y := a.(mState), b.(mState)
		return x.hash == y.hash && maps.Equal(x.claims, y.claims) && maps.Equal(x.keys, y.keys)
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(mInput), output.(mOutput)
		ans := fmt.Sprintf("%d %s", out.Status, out.Code)
		if out.Unknown {
			ans = "unknown"
		}
		arg := in.Key
		if in.Kind != "claim" {
			arg = in.ClaimID
		}
		return strings.TrimSpace(fmt.Sprintf("%s %s(%s) → %s %s %s", in.User, in.Kind, arg, ans, out.ClaimID, out.State))
	},
	DescribeState: func(state any) string {
		s := state.(mState)
		names := [...]string{"pending", "confirmed", "released", "cancelled (void)", "cancelled (returned)"}
		var parts []string
		for _, id := range slices.Sorted(maps.Keys(s.claims)) {
			c := s.claims[id]
			parts = append(parts, fmt.Sprintf("%s:%s:%s", id, c.user, names[c.state]))
		}
		return fmt.Sprintf("%d claims {%s}", len(s.claims), strings.Join(parts, " "))
	},
}

// partitionClaims splits one sale's operations into one partition per
// user and the stock partition.
func partitionClaims(ops []porcupine.Operation) [][]porcupine.Operation {
	var stock []porcupine.Operation
	users := map[string][]porcupine.Operation{}
	for _, o := range ops {
		in := o.Input.(mInput)
		users[in.User] = append(users[in.User], o)
		if in.Kind != "lookup" {
			stock = append(stock, o)
		}
	}
	var out [][]porcupine.Operation
	for _, u := range slices.Sorted(maps.Keys(users)) {
		out = append(out, users[u])
	}
	return append(out, stock) // last: a failing user's partition is the shorter story
}
