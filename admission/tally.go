package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/queue"
)

// WaitBounds are the upper bounds, in whole seconds, of the wait
// histograms in an event's Tally (advance.lua keeps the same list); a last
// bucket holds the waits beyond the largest. Waits are measured from token
// times carried in whole seconds, so the first bucket is "up to a second".
var WaitBounds = []int64{1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// Histogram counts waits in the buckets of WaitBounds.
type Histogram struct {
	// Counts has one entry per bound of WaitBounds, plus one for the
	// waits beyond the largest.
	Counts []int64 `json:"counts"`
	// Count is the number of waits and SumSeconds their total.
	Count      int64 `json:"count"`
	SumSeconds int64 `json:"sum_seconds"`
}

// Tally is what an event's admission counters hold for its post-sale
// report. It lives in Redis beside the frontier, so it outlives any node.
type Tally struct {
	// Frontier is F, Present the positions whose holder fetched an
	// admission token at least once, NoShows the admitted positions that
	// never did (net of those counted back).
	Frontier float64
	Present  int64
	NoShows  int64
	// JoinToAdmission counts, once per present position, the time from
	// joining to its first admission token; AdmissionToClaim, once per
	// position granted a claim, the time from the admission token the
	// claim used to its first grant.
	JoinToAdmission  Histogram
	AdmissionToClaim Histogram
}

// Tally reads event ev's admission counters in one round trip.
func (f *Frontier) Tally(ctx context.Context, ev string) (Tally, error) {
	rdb, ok := f.rdb.(redis.Cmdable)
	if !ok {
		return Tally{}, errors.New("tally: the Redis client cannot pipeline")
	}
	var st *redis.SliceCmd
	var hist *redis.MapStringStringCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		st = p.HMGet(ctx, frontierKey(ev), "f", "n", "p")
		hist = p.HGetAll(ctx, tallyKey(ev))
		return nil
	})
	if err != nil {
		return Tally{}, fmt.Errorf("tally %s: %w", ev, err)
	}
	vals := st.Val()
	t := Tally{Frontier: tallyNum(vals[0]), NoShows: int64(tallyNum(vals[1])), Present: int64(tallyNum(vals[2]))}
	h := hist.Val()
	t.JoinToAdmission = histogramOf(h, "j")
	t.AdmissionToClaim = histogramOf(h, "c")
	return t, nil
}

// LaneTally is what one lane's own counters hold for the post-sale
// report: its queue counter and its frontier hash (queue/lanes.go; the
// lane's waits go to the event's Tally).
type LaneTally struct {
	// Joined is the lane's sequence counter: how many joined the lane.
	Joined int64
	// Frontier, Present and NoShows are the lane's, as in Tally.
	Frontier float64
	Present  int64
	NoShows  int64
}

// TallyLane reads the counters of lane (1-based, in the order of
// event.Config.Lanes) of event ev in one round trip; all zero for a lane
// nobody joined yet.
func (f *Frontier) TallyLane(ctx context.Context, ev string, lane int) (LaneTally, error) {
	rdb, ok := f.rdb.(redis.Cmdable)
	if !ok {
		return LaneTally{}, errors.New("tally: the Redis client cannot pipeline")
	}
	if lane < 1 {
		return LaneTally{}, fmt.Errorf("tally %s: lane %d is not a lane of its own", ev, lane)
	}
	var seq *redis.StringCmd
	var st *redis.SliceCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		seq = p.Get(ctx, queue.KeysForLane(ev, lane).Seq)
		st = p.HMGet(ctx, laneFrontierKey(ev, lane), "f", "n", "p")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return LaneTally{}, fmt.Errorf("tally %s lane %d: %w", ev, lane, err)
	}
	joined, _ := strconv.ParseInt(seq.Val(), 10, 64)
	vals := st.Val()
	return LaneTally{Joined: joined, Frontier: tallyNum(vals[0]), NoShows: int64(tallyNum(vals[1])), Present: int64(tallyNum(vals[2]))}, nil
}

// tallyNum reads a counter of a frontier hash; 0 when absent.
func tallyNum(v any) float64 {
	s, _ := v.(string)
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) {
		return 0
	}
	return x
}

// histogramOf reads histogram pre from the tally hash's fields.
func histogramOf(h map[string]string, pre string) Histogram {
	get := func(field string) int64 {
		n, _ := strconv.ParseInt(h[pre+":"+field], 10, 64)
		return n
	}
	out := Histogram{Counts: make([]int64, len(WaitBounds)+1), Count: get("n"), SumSeconds: get("s")}
	for i, b := range WaitBounds {
		out.Counts[i] = get(strconv.FormatInt(b, 10))
	}
	out.Counts[len(WaitBounds)] = get("inf")
	return out
}

// waitsOf returns waits, or -1 for each position when none were given.
func waitsOf(ps, waits []int64) []int64 {
	if len(waits) == len(ps) {
		return waits
	}
	out := make([]int64, len(ps))
	for i := range out {
		out[i] = -1
		if i < len(waits) {
			out[i] = waits[i]
		}
	}
	return out
}

func laneFrontierKey(ev string, lane int) string {
	return queue.LaneTag(ev, lane) + "adm"
}
func tallyKey(ev string) string   { return "ar:{" + ev + "}:tally" }
func claimedKey(ev string) string { return "ar:{" + ev + "}:claimbits" }
