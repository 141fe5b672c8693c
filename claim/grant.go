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
}

// Reply codes of claim.lua, per request.
const (
	codeGranted = 0
	codeReplay  = 1
	codeLimit   = 2
	codeEmpty   = 3
	codeFrozen  = 4
	codeStale   = 5
)

// outcome is claim.lua's decoded reply for one request.
type outcome struct {
	code    int64
	claimID string
	left    int64
	status  Status
	payload string // order event still in the outbox, or ""
	held    []string
}

// grantArgs is how many ARGV entries claim.lua takes per request.
const grantArgs = 8

// grant runs claim.lua once for reqs, all for bucket b of event ev, and
// returns one outcome per request, in order. An error means the script's
// fate is unknown: requests granted before it stay in the outbox, so a
// retry with the same idempotency key finds them.
func (s *Store) grant(ctx context.Context, ev string, b int, reqs []request) ([]outcome, error) {
	k := bucketOf(ev, b)
	keys := k.stockKeys(3 * len(reqs))
	args := make([]any, 0, grantArgs*len(reqs))
	for _, r := range reqs {
		id, err := newClaimID(b)
		if err != nil {
			return nil, err
		}
		payload, err := marshalOrderEvent(&OrderEvent{
			Type: KindGranted, Event: ev, ClaimID: id, User: r.User, Pos: r.Pos, Units: 1,
			At: r.Now.UTC(), Idem: r.IdemKey, TraceID: r.TraceID,
		})
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.userClaims(r.User), k.userHistory(r.User), k.idem(r.User, r.IdemKey))
		args = append(args, r.User, r.Limit, id, payload, r.Pos, r.IdemKey,
			max(int64(r.IdemTTL/time.Second), 1), max(r.ClaimTTL.Milliseconds(), 1))
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
		o.code = f.code(5*i, codeGranted, codeStale)
		o.claimID = f.str(5*i + 1)
		o.left = f.int(5*i + 2)
		o.status = Status(f.str(5*i + 3))
		o.payload = f.str(5*i + 4)
		if f.err == nil && (o.code == codeGranted || o.code == codeReplay) && o.claimID == "" {
			f.err = fmt.Errorf("claim %s/%d: malformed reply: code %d without a claim id", ev, b, o.code)
		}
		if o.code == codeLimit {
			o.held, o.claimID = strings.Split(o.claimID, ","), ""
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return out, nil
}
