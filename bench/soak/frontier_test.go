//go:build soak && linux

package soak

import (
	"context"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// stepCredit is the most time one frontier step credits on the soak's
// nodes (their default 100 ms tick): a window's first step may credit up
// to that much time from before the window.
var stepCredit = admission.MaxCreditFor(100 * time.Millisecond)

// rateLag is how long after a rate change a node may still step at the
// old rate: its config read, through a link delayed up to 400 ms a chunk.
const rateLag = 3 * time.Second

// readFrontier reads f from the frontier hash and Redis TIME in one script,
// so the value is exactly the frontier at that Redis instant: a read that
// waited out a Redis pause returns the frontier of after the pause with
// the time of after the pause, and a frontier that stood still during a
// gap shows standing still.
var readFrontier = redis.NewScript(`local f = redis.call('HGET', KEYS[1], 'f')
local t = redis.call('TIME')
return {f or '', t[1], t[2]}`)

// sampleFrontier checks the frontier of sale ev as Redis holds it (every
// node's view lags it by up to a tick, and by much more on a node whose
// link is cut): never past the people who joined, and its advance over
// the last second and over the last 5–10 s at most
//
//	highest rate in effect (from rateLag before the window) × (window +
//	stepCredit) + no-show candidates + 2
//
// where the no-show candidates are positions admitted at least the grace
// before the window's end whose holder had fetched no admission (the
// documented no-show rule moves past them), and 2 is rounding.
func (ss *sales) sampleFrontier(ctx context.Context, ev string, remaining int64) {
	rdb := ss.s.redis()
	key := "ar:{" + ev + "}:adm" // admission/frontier.go's frontierKey
	vals, err := readFrontier.Run(ctx, rdb, []string{key}).StringSlice()
	if err != nil || len(vals) != 3 || vals[0] == "" {
		return
	}
	f, err := strconv.ParseFloat(vals[0], 64)
	if err != nil {
		return
	}
	sec, err1 := strconv.ParseInt(vals[1], 10, 64)
	usec, err2 := strconv.ParseInt(vals[2], 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	joined, err := rdb.Get(ctx, queue.KeysFor(ev).Seq).Int64()
	if err != nil {
		return
	}
	ss.checks.Add(1)
	if int64(f) > joined {
		ss.h.violateNow(ev, "frontier %.1f passed the %d who joined", f, joined)
	}
	ss.checkStall(ev, f, joined, remaining)
	now := time.Unix(sec, usec*1000)
	ss.mu.Lock()
	if n := len(ss.frames); n > 0 && !now.After(ss.frames[n-1].at) {
		ss.mu.Unlock()
		return // Redis went back in time (a failover to another clock)
	}
	ss.frames = append(ss.frames, frame{now, f})
	var long, short *frame
	for j := range ss.frames {
		fr := &ss.frames[j]
		if long == nil && now.Sub(fr.at) <= 10*time.Second {
			long = fr
		}
		if now.Sub(fr.at) >= time.Second {
			short = fr
		}
	}
	// The frontier the grace ago bounds the positions the no-show rule
	// may have moved past by now: the admission clock runs no faster than
	// Redis's.
	credited := f
	for j := range ss.frames {
		if !ss.frames[j].at.Before(now.Add(-saleGrace * time.Second)) {
			credited = ss.frames[j].frontier
			break
		}
	}
	ss.mu.Unlock()
	if short != nil && now.Sub(short.at) <= 3*time.Second {
		ss.checkPace(ev, *short, frame{now, f}, credited, false)
	}
	if long != nil && now.Sub(long.at) >= 5*time.Second {
		ss.checkPace(ev, *long, frame{now, f}, credited, true)
	}
}

// checkPace checks the frontier's advance from old to cur against the rate
// (see sampleFrontier); credited is the frontier the grace before cur.
func (ss *sales) checkPace(ev string, old, cur frame, credited float64, record bool) {
	ss.checks.Add(1)
	span := cur.at.Sub(old.at)
	// A node applies a rate change on its next config read, which a
	// delayed link makes late: the rate before a change counts rateLag on.
	rate := ss.maxRate(ev, old.at.Add(-rateLag), cur.at)
	lo := old.frontier - rate*saleGrace - 2
	tol := ss.h.noShows(ev, int64(lo), int64(credited), cur.at)
	allowed := rate*(span+stepCredit).Seconds() + float64(tol) + 2
	if pace := (cur.frontier - old.frontier) / span.Seconds(); record {
		ss.mu.Lock()
		if pace > ss.fastest {
			ss.fastest, ss.fastestTol = pace, tol
		}
		ss.mu.Unlock()
	}
	if cur.frontier-old.frontier > allowed {
		ss.h.violateNow(ev, "frontier moved %.1f → %.1f in %.1f s: more than rate %.0f/s × (time + %s step credit) + %d no-show candidates + 2",
			old.frontier, cur.frontier, span.Seconds(), rate, stepCredit, tol)
	}
}
