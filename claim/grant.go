package claim

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// request is one claim attempt as the script sees it.
type request struct {
	Event, User, IdemKey string
	// TraceID is the sampled trace of the claim request, or "" (the
	// order event's trace_id).
	TraceID           string
	Pos, Limit        int64
	IdemTTL, ClaimTTL time.Duration
	Now               time.Time
	// Signals are the claim's signal limits; their sets expire at
	// SignalsUntil.
	Signals      []Signal
	SignalsUntil time.Time
}

// Reply codes of claim.lua, per request.
const (
	codeGranted = 0
	codeReplay  = 1
	codeLimit   = 2
	codeEmpty   = 3
	codeFrozen  = 4
	codeStale   = 5
	codeSignal  = 6
)

// outcome is claim.lua's decoded reply for one request.
type outcome struct {
	code    int64
	claimID string
	left    int64
	status  Status
	payload string // order event still in the outbox, or ""
	held    []string
	dim     string // the signal whose limit refused it
}

// grantArgs is how many ARGV entries claim.lua takes per request before
// its signals (two each).
const grantArgs = 10

// grant runs claim.lua once for reqs, all for bucket b of event ev, and
// returns one outcome per request, in order. An error means the script's
// fate is unknown: requests granted before it stay in the outbox, so a
// retry with the same idempotency key finds them.
func (s *Store) grant(ctx context.Context, ev string, b int, reqs []request) ([]outcome, error) {
	k := bucketOf(ev, b)
	keys := k.stockKeys(3 * len(reqs))
	for _, r := range reqs {
		if err := checkSignals(r.Signals); err != nil {
			return nil, fmt.Errorf("claim %s/%d: %w", ev, b, err)
		}
	}
	args := make([]any, 0, grantArgs*len(reqs))
	for _, r := range reqs {
		id, err := newClaimID(b)
		if err != nil {
			return nil, err
		}
		oe := OrderEvent{
			Type: KindGranted, Event: ev, ClaimID: id, User: r.User, Pos: r.Pos, Units: 1,
			At: r.Now.UTC(), Idem: r.IdemKey, TraceID: r.TraceID,
		}
		if len(r.Signals) > 0 {
			sigs := make([]string, len(r.Signals))
			for i, sg := range r.Signals {
				sigs[i] = sg.Dim + ":" + sg.Hash
			}
			oe.Signals = strings.Join(sigs, " ")
			oe.SignalsUntil = r.SignalsUntil.UTC()
		}
		payload, err := marshalOrderEvent(&oe)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.userClaims(r.User), k.userHistory(r.User), k.idem(r.User, r.IdemKey))
		args = append(args, r.User, r.Limit, id, payload, r.Pos, r.IdemKey,
			max(int64(r.IdemTTL/time.Second), 1), max(r.ClaimTTL.Milliseconds(), 1),
			len(r.Signals), r.SignalsUntil.UnixMilli())
		for _, sg := range r.Signals {
			keys = append(keys, k.signal(sg.Dim, sg.Hash))
			args = append(args, sg.Max, sg.Dim)
		}
	}
	res, err := s.lua.claim.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("claim %s/%d: %w", ev, b, err)
	}
	if len(res) != 5*len(reqs) {
		return nil, fmt.Errorf("claim %s/%d: %d replies for %d requests", ev, b, len(res), len(reqs))
	}
	f := fields(fmt.Sprintf("claim %s/%d", ev, b), res)
	out := make([]outcome, len(reqs))
	for i := range out {
		o := &out[i]
		o.code = f.code(5*i, codeGranted, codeSignal)
		o.claimID = f.str(5*i + 1)
		o.left = f.int(5*i + 2)
		o.status = Status(f.str(5*i + 3))
		o.payload = f.str(5*i + 4)
		if f.err == nil && (o.code == codeGranted || o.code == codeReplay) && o.claimID == "" {
			f.err = fmt.Errorf("claim %s/%d: malformed reply: code %d without a claim id", ev, b, o.code)
		}
		switch o.code {
		case codeLimit:
			o.held, o.claimID = strings.Split(o.claimID, ","), ""
		case codeSignal:
			o.dim, o.claimID = o.claimID, ""
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return out, nil
}

// checkSignals refuses signals the script could not count honestly: an
// unknown dimension, a hash that is not 16 to 64 hex digits, a limit
// below 1, or a dimension twice.
func checkSignals(sigs []Signal) error {
	seen := map[string]bool{}
	for _, sg := range sigs {
		switch {
		case !knownDim(sg.Dim) || seen[sg.Dim]:
			return fmt.Errorf("signal %q: unknown or repeated", sg.Dim)
		case !isHex(sg.Hash) || len(sg.Hash) < 16 || len(sg.Hash) > 64:
			return fmt.Errorf("signal %s: the hash must be 16 to 64 hex digits", sg.Dim)
		case sg.Max < 1:
			return fmt.Errorf("signal %s: the limit must be at least 1", sg.Dim)
		}
		seen[sg.Dim] = true
	}
	return nil
}

// Signal dimensions.
const (
	SignalDevice  = "device"
	SignalPayment = "payment"
	SignalPhone   = "phone"
	SignalAddress = "address"
)

// knownDim reports whether d is a signal claim.lua may count: the four
// limited ones, the client's network, or a claim of the identity token
// (token:<name>, the name as event.Signals.Claims allows).
func knownDim(d string) bool {
	switch d {
	case SignalDevice, SignalPayment, SignalPhone, SignalAddress, SignalNetwork:
		return true
	}
	name, ok := strings.CutPrefix(d, SignalToken)
	return ok && tokenClaimName(name)
}

// tokenClaimName reports whether name can name an identity token's claim
// in a signal: 1 to 64 of A-Z a-z 0-9 _ . / - (no ':', which ends the
// dimension in a signal set's key).
func tokenClaimName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-') {
			return false
		}
	}
	return true
}

// NoLimit is the limit of a signal recorded for the sweep only: a value
// may hold this many claims, which no sale reaches.
const NoLimit = 1 << 30

func isHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
