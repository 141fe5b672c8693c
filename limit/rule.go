package limit

import (
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// Dim is the dimension a bucket counts: the whole deployment, one event,
// or one caller (IP, device or user) within an event.
type Dim string

// Dimensions. Global and Event are shared budgets: when degraded, each node
// takes its share of them. IP, Device and User count one caller and are
// checked first, so a caller who is refused never spends a shared budget.
const (
	Global Dim = "global"
	Event  Dim = "event"
	IP     Dim = "ip"
	Device Dim = "device"
	User   Dim = "user"
)

// Shared reports whether d is a budget of the whole deployment (Global,
// Event) rather than of one caller.
func (d Dim) Shared() bool { return d == Global || d == Event }

// Limit is a token bucket's shape: Rate tokens per second refill a bucket
// of Burst tokens. The zero Limit (Rate 0) means unlimited.
type Limit struct {
	// Rate is the sustained number of requests per second.
	Rate float64
	// Burst is how many requests may come at once after a quiet spell.
	//
	// Default: max(1, Rate)
	Burst float64
}

// Unlimited reports whether l lets everything through.
func (l Limit) Unlimited() bool { return !(l.Rate > 0) }

// burst is Burst with its default.
func (l Limit) burst() float64 {
	if l.Burst >= 1 {
		return l.Burst
	}
	return max(1, l.Rate)
}

// share is a node's part of a shared limit when the deployment's budget is
// kept by n nodes separately.
func (l Limit) share(n int) Limit {
	if n < 1 {
		n = 1
	}
	return Limit{Rate: l.Rate / float64(n), Burst: max(1, l.burst()/float64(n))}
}

// Rule is one bucket a request must pass.
type Rule struct {
	// Budget separates budgets of the same dimension: "join", "claim".
	Budget string
	// Dim is the dimension counted.
	Dim Dim
	// Event is the event id; empty for Global.
	Event string
	// Value is the caller's IP, device id or user id; empty for Global
	// and Event.
	Value string
	// Limit is the bucket's shape. An unlimited rule is skipped.
	Limit Limit
}

// Key is the rule's Redis key: each bucket is its own hash tag, so the
// buckets spread over a Redis Cluster's slots. Caller values are hashed:
// keys stay short whatever a caller sends, and hold no raw device ids.
func (r Rule) Key() string {
	k := "ar:{rl:" + r.Budget + ":" + string(r.Dim)
	if r.Event != "" {
		k += ":" + r.Event
	}
	if r.Value != "" {
		k += ":" + digest(r.Value)
	}
	return k + "}"
}

// digest is a short, collision-resistant name for an untrusted value.
func digest(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// Decision is the outcome of Allow.
type Decision struct {
	// Allowed is true when every rule had a token.
	Allowed bool
	// Dim names the dimension that refused; empty when allowed.
	Dim Dim
	// Refused is how many buckets refused (0 when allowed): a refusal by
	// Dim alone is 1. A join refused by its per-IP bucket alone is the
	// busy network a door rule may challenge (web/protect.BusyNetwork).
	Refused int
	// Remaining is the fewest tokens left in any bucket checked (-1 when
	// no rule applied).
	Remaining int64
	// RetryAfter is when the refusing bucket holds a token again; 0 when
	// allowed.
	RetryAfter time.Duration
	// Local is true when node-local buckets decided (degraded mode).
	Local bool
}

// split orders rules for the two phases: per-caller rules first, shared
// ones after, leaving out unlimited rules.
func split(rules []Rule) (caller, shared []Rule) {
	for _, r := range rules {
		switch {
		case r.Limit.Unlimited():
		case r.Dim.Shared():
			shared = append(shared, r)
		default:
			caller = append(caller, r)
		}
	}
	return caller, shared
}
