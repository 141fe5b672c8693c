package door

import (
	"errors"
	"strings"

	"github.com/anteroom/anteroom/event"
)

// Step is where a request meets the door.
type Step uint8

// The steps that ask the door.
const (
	// Join is a sale's join: a filter's "maybe" is left to the join
	// script (Verdict.Exact).
	Join Step = iota
	// Status is a status poll (the JSON status and the basic page).
	Status
	// Gate is the proxy gate (nginx auth_request, an edge function).
	Gate
	// Room is a safety-net room's join, and its gate's admit-at-once:
	// an eligibility list's "maybe" is left to the room's entrance
	// script (Verdict.Exact.Eligible); a block list's refuses.
	Room
	// Claim is a claim, and a bypass pass's redemption (the claim it
	// buys is judged the same).
	Claim
)

// Exact names the lists whose node filter could not tell and which the
// join script (at Join) or the room's entrance script (at Room: its
// eligibility lists only) decides exactly from their copies in the
// queue's slot.
type Exact struct {
	// Block are block lists whose filter said Maybe: the join refuses a
	// caller on one of them (queue.ErrBlocked).
	Block []string
	// Eligible are eligibility lists whose filter said Maybe, when no
	// list answered Present: the join refuses a caller on none of them
	// (queue.ErrNotEligible).
	Eligible []string
}

// Empty reports whether nothing is left to the join script.
func (x Exact) Empty() bool { return len(x.Block) == 0 && len(x.Eligible) == 0 }

// Verdict is the door's decision for one request.
type Verdict struct {
	// Action is what happens: Queue (the default), Bypass, Block,
	// Challenge, Sink or NotEligible.
	Action Action
	// Rule names the rule that decided; "" when no rule did.
	Rule string
	// Exact is what the join script decides (at Join, and at Room its
	// eligibility lists; only for Queue and Challenge).
	Exact Exact
}

// Refusals of the door, answered 403 (package web/kit).
var (
	// ErrBlocked: the caller is on one of the sale's block lists, or a
	// rule blocks them. The answer says nothing more.
	ErrBlocked = errors.New("door: blocked")
	// ErrNotEligible: the caller is on none of the sale's eligibility
	// lists. A NotEligibleError carries the sale's message.
	ErrNotEligible = errors.New("door: not eligible")
)

// NotEligibleError is the refusal of a caller on none of a sale's
// eligibility lists, with the sale's message (event.Door.NotEligibleMessage
// or event.DefaultNotEligibleMessage). It is ErrNotEligible (errors.Is).
type NotEligibleError struct{ Message string }

func (e *NotEligibleError) Error() string { return "door: not eligible: " + e.Message }

// Is makes a NotEligibleError match ErrNotEligible.
func (e *NotEligibleError) Is(target error) bool { return target == ErrNotEligible }

// NotEligibleFor is cfg's not_eligible refusal.
func NotEligibleFor(cfg *event.Config) error {
	msg := cfg.Door.NotEligibleMessage
	if msg == "" {
		msg = event.DefaultNotEligibleMessage
	}
	return &NotEligibleError{Message: msg}
}

// Err is the refusal of verdict v in sale cfg: ErrBlocked, a
// NotEligibleError, or nil for the actions that let the request on (or
// send it to a sink, which never refuses).
func (v Verdict) Err(cfg *event.Config) error {
	switch v.Action {
	case Block:
		return ErrBlocked
	case NotEligible:
		return NotEligibleFor(cfg)
	}
	return nil
}

// Challenges reports whether a rule of cfg may send a request to a
// challenge: the proof-of-work challenge endpoint then issues challenges
// for the sale, so a challenged client can solve one.
func Challenges(cfg *event.Config) bool {
	for i := range cfg.Door.Rules {
		if cfg.Door.Rules[i].Then == "challenge" {
			return true
		}
	}
	return false
}

// BusyFunction is how a rule reads Request.Busy: busy_network() (package
// door/rules compiles it only in a rule whose then is challenge).
const BusyFunction = "busy_network"

// BusyChallenges reports whether a rule of cfg may send a join over its
// per-IP budget to a challenge instead of its 429: a rule whose then is
// challenge and whose when mentions busy_network(). Only a join the
// per-IP budget alone refused asks (it reads memory only); a false "yes"
// (the name in a string literal) costs one more node-local Check of a
// join already refused.
func BusyChallenges(cfg *event.Config) bool {
	for i := range cfg.Door.Rules {
		r := &cfg.Door.Rules[i]
		if r.Then == "challenge" && strings.Contains(r.When, BusyFunction) {
			return true
		}
	}
	return false
}
