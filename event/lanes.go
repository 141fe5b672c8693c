package event

import (
	"fmt"
	"time"
)

// Lane is a share of an event's admission rate (and, optionally, an earlier
// start) for a group of people: members, the pre-registered, a partner's
// customers. A person's lane is decided when they join, by an invite signed
// for the lane (tokens.Invites.SignLane) or by a claim of their verified
// user token (Claim, with the jwt identity mode), and kept in their ticket.
// Each lane is a queue of its own, with its own shuffle window (from the
// queue's opening to the lane's start), its own frontier advancing at
// Share × admit_rate from the lane's start, and its own no-show count;
// people outside every lane are the default lane, which advances at
// (1 − the lanes' shares) × admit_rate. An event without lanes is exactly
// one default lane at the full rate.
type Lane struct {
	// Name names the lane in invites, tickets and the admin view:
	// lowercase letters, digits and '-', at most 32 characters.
	Name string `json:"name"`
	// Share is the lane's fraction of admit_rate_per_second, above 0; the
	// lanes' shares sum to less than 1 (the default lane keeps the rest).
	Share float64 `json:"share"`
	// StartsAt is when the lane's admission starts (its window closes):
	// earlier than the sale's for early access, not before
	// prequeue_opens_at.
	//
	// Default: the sale's admission start (WindowEnd)
	StartsAt *time.Time `json:"starts_at,omitempty"`
	// Claim, when set, puts a joiner whose verified user token carries
	// this claim with this value (a string, or an array holding it) in
	// the lane. Only the jwt identity mode has user tokens.
	Claim *LaneClaim `json:"claim,omitempty"`
}

// LaneClaim selects a lane by a claim of the caller's user token.
type LaneClaim struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MaxLanes bounds an event's lanes.
const MaxLanes = 8

// Start is when lane l of sale c starts admitting.
func (l *Lane) Start(c *Config) time.Time {
	if l.StartsAt != nil {
		return *l.StartsAt
	}
	return c.WindowEnd()
}

// Lane returns the lane named name and its index, or false.
func (c *Config) Lane(name string) (int, *Lane, bool) {
	for i := range c.Lanes {
		if c.Lanes[i].Name == name {
			return i, &c.Lanes[i], true
		}
	}
	return -1, nil, false
}

// DefaultShare is the default lane's fraction of the admission rate: 1
// without lanes.
func (c *Config) DefaultShare() float64 {
	if len(c.Lanes) == 0 {
		return 1
	}
	s := 1.0
	for _, l := range c.Lanes {
		s -= l.Share
	}
	return s
}

func validLaneName(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9':
		case ch == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// validateLanes checks the lanes of c.
func (c *Config) validateLanes() error {
	if len(c.Lanes) == 0 {
		return nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: lanes: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	switch {
	case len(c.Lanes) > MaxLanes:
		return bad("at most %d lanes", MaxLanes)
	case c.Mode != FCFS:
		return bad("lanes need mode fcfs")
	case c.JoinShards > 1:
		return bad("lanes need join_shards 1")
	}
	sum, seen := 0.0, map[string]bool{}
	for i := range c.Lanes {
		l := &c.Lanes[i]
		switch {
		case !validLaneName(l.Name) || l.Name == "default":
			return bad("name %q must be 1 to 32 lowercase letters, digits and '-', not \"default\"", l.Name)
		case seen[l.Name]:
			return bad("name %q is used twice", l.Name)
		case !(l.Share > 0) || l.Share >= 1:
			return bad("lane %s: share must be above 0 and below 1", l.Name)
		case l.StartsAt != nil && (l.StartsAt.Before(c.PrequeueOpensAt) || l.StartsAt.After(c.WindowEnd())):
			return bad("lane %s: starts_at must be between prequeue_opens_at and the sale's admission start", l.Name)
		case l.Claim != nil && (l.Claim.Name == "" || len(l.Claim.Name) > 64 || l.Claim.Value == "" || len(l.Claim.Value) > 128):
			return bad("lane %s: claim needs a name (at most 64 bytes) and a value (at most 128 bytes)", l.Name)
		}
		seen[l.Name] = true
		sum += l.Share
	}
	if sum >= 1-1e-9 {
		return bad("the shares sum to %.3f; they must leave the default lane some rate (below 1)", sum)
	}
	return nil
}

// lanesShape reports whether the lanes' names, order or starts differ:
// tickets and admissions name a lane by its index, and a lane's window is
// its start, so these lock once the queue opens (shares and claims do not).
func lanesShape(a, b []Lane) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		sa, sb := a[i].StartsAt, b[i].StartsAt
		if a[i].Name != b[i].Name || (sa == nil) != (sb == nil) || (sa != nil && !sa.Equal(*sb)) {
			return true
		}
	}
	return false
}
