//go:build soak && linux

package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/wait"
)

// The sale every round runs: small enough to sell out in about a minute
// with the modest crowd two shared cores allow.
const (
	saleSupply  = 150
	saleLimit   = 2
	saleRate    = 5
	saleActive  = 12
	saleBuckets = 4
	saleGrace   = 5
	arrivals    = 6 // shoppers per second
)

// sales runs one sale after another until the run ends, audits each, and
// samples the current one every second.
type sales struct {
	f      *faults          // for the faults a sale's plan starts itself
	plan   func(n int) plan // when set, sale n's plan instead of a drawn one
	s      *system
	h      *history
	c      *crowd
	checks atomic.Int64

	mu     sync.Mutex
	ids    []string
	live   map[string]*saleState
	rates  map[string][]rateAt
	frames []frame
	done   int
	// fastest is the highest frontier pace seen over a sampling window,
	// with the no-show allowance of that window.
	fastest    float64
	fastestTol int
	// The stall check's view of the current sale's frontier: its value
	// and when it last moved.
	stallSale  string
	stallF     float64
	stallMoved time.Time
	// blockedAt is when the door's block list was loaded.
	blockedAt time.Time
}

type rateAt struct {
	at   time.Time
	rate float64
}

// saleState is what the soak knows of one sale beside its history: its
// plan, its start as last saved, its pass and its shop secret.
type saleState struct {
	plan   plan
	start  time.Time
	pass   string
	secret string
	// invites and passes count the shoppers sent to the lane and with
	// the pass.
	invites, passes int
	// door is the sale's door (door_test.go), nil without one.
	door *saleDoor
	// rings are the sale's rings and their signals (rings_test.go), nil
	// for a sale without.
	rings *ringBook
}

// buckets is sale ev's bucket count: saleBuckets, or 1 for a sale with
// signal limits (event.Config refuses more).
func (ss *sales) buckets(ev string) int {
	if st := ss.state(ev); st != nil && st.rings != nil {
		return 1
	}
	return saleBuckets
}

// state returns the state of sale ev (nil before its creation).
func (ss *sales) state(ev string) *saleState {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.live[ev]
}

// started reports whether sale ev has started by the soak's clock (with
// a second's margin either way for the nodes' Redis clock).
func (ss *sales) started(ev string, margin time.Duration) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st := ss.live[ev]
	return st != nil && time.Now().After(st.start.Add(margin))
}

// frame is one sample of the current sale's frontier.
type frame struct {
	at       time.Time
	frontier float64
}

func (ss *sales) current() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.ids) == 0 {
		return "none"
	}
	return ss.ids[len(ss.ids)-1]
}

func (ss *sales) all() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]string(nil), ss.ids...)
}

func (ss *sales) rateSet(ev string, r float64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.rates[ev] = append(ss.rates[ev], rateAt{time.Now(), r})
}

// maxRate is the highest rate in effect for ev between from and to.
func (ss *sales) maxRate(ev string, from, to time.Time) float64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	best := 0.0
	rs := ss.rates[ev]
	for i, r := range rs {
		if r.at.After(to) {
			break
		}
		if i+1 == len(rs) || !rs[i+1].at.Before(from) {
			best = max(best, r.rate)
		}
	}
	return best
}

// run plays sales until ctx ends.
//
// Each sale's plan and its staff's draws come from a generator of their
// own (plans), the crowd's from rnd: how many shoppers a sale drew
// depends on how long it ran, which is the machine's, and must not move
// the plans of the sales after it (a seed replays every sale's plan).
func (ss *sales) run(ctx context.Context, rnd *rand.Rand) {
	a, b := rnd.Uint64(), rnd.Uint64()
	plans := rand.New(rand.NewPCG(a, b))
	// The rings' draws (issue 36) from a generator of their own, derived
	// from the plans' seed without drawing from it: the plans of a
	// recorded seed stay as they were.
	rings := rand.New(rand.NewPCG(a^0x72696e6773, b^0x63616e63656c))
	for n := 1; ctx.Err() == nil; n++ {
		ev := fmt.Sprintf("soak%d", n)
		p := drawPlan(plans, n, ss.s.cluster != nil)
		srnd := rand.New(rand.NewPCG(plans.Uint64(), plans.Uint64()))
		drnd := rand.New(rand.NewPCG(plans.Uint64(), plans.Uint64()))
		p.rings, p.deviceLimit = drawRings(rings, n)
		crnd := rand.New(rand.NewPCG(rings.Uint64(), rings.Uint64()))
		rrnd := rand.New(rand.NewPCG(rings.Uint64(), rings.Uint64()))
		if ss.plan != nil {
			p = ss.plan(n)
		}
		if err := ss.create(ctx, ev, p, rnd); err != nil {
			if ctx.Err() == nil {
				ss.h.violateNow(ev, "could not create sale %s: %v", ev, err)
			}
			return
		}
		if st := ss.state(ev); st != nil && st.rings != nil {
			st.rings.mu.Lock()
			st.rings.rnd = rrnd
			st.rings.mu.Unlock()
		}
		sctx, cancel := context.WithTimeout(ctx, 150*time.Second+p.lead)
		var side sync.WaitGroup
		side.Go(func() { ss.beforeStart(sctx, ev, srnd) })
		side.Go(func() { ss.changeDoor(sctx, ev, drnd) })
		side.Go(func() { ss.cancelDuring(sctx, ev, crnd) })
		soldOut := false
		for !soldOut && wait.Sleep(sctx, time.Second) {
			ss.c.arrive(sctx, ev, arrivals, ss.state(ev), rnd)
			soldOut = ss.soldOut(ev)
		}
		side.Wait()
		// Those in line learn it is sold out; give them a moment.
		wait.Sleep(sctx, 20*time.Second)
		cancel()
		ss.c.wait()
		// A sale the run's end cut short is audited as it stands too: its
		// promises hold at any moment, and a 2-minute run's second sale
		// (the first with rings and staff cancelling) seldom sells out.
		cutShort := ctx.Err() != nil
		ss.cancelAfter(ev, crnd)
		ss.audit(context.Background(), ev)
		ss.mu.Lock()
		ss.done++
		ss.mu.Unlock()
		if cutShort {
			ss.h.note("audit", "sale %s: cut short by the run's end, audited as it stood", ev)
			return
		}
	}
}

func (ss *sales) create(ctx context.Context, ev string, p plan, rnd *rand.Rand) error {
	now := time.Now().UTC().Truncate(time.Second)
	start := now.Add(p.lead.Truncate(time.Second))
	cfg := map[string]any{
		"name": ev, "supply": saleSupply, "per_user_limit": saleLimit, "buckets": saleBuckets,
		"prequeue_opens_at": now.Add(-time.Second), "starts_at": start, "ends_at": now.Add(time.Hour),
		"random_window_seconds": 0, "admit_rate_per_second": saleRate, "max_active": saleActive,
		"no_show_grace_seconds": saleGrace, "claim_ttl_seconds": p.claimTTL, "admission_ttl_seconds": int(admissionTTL.Seconds()),
	}
	if p.lane {
		cfg["lanes"] = []map[string]any{{"name": laneName, "share": laneShare, "starts_at": start.Add(-p.earlyBy().Truncate(time.Second))}}
	}
	st := &saleState{plan: p, start: start}
	var eligibleAt time.Time
	if p.door {
		st.door = &saleDoor{}
		if p.eligible {
			var err error
			if st.door, eligibleAt, err = ss.prepareDoor(ctx, ev, ss.c.members); err != nil {
				return err
			}
			ss.c.members += memberPool
		}
		cfg["door"] = st.door.door("")
	}
	if p.shop {
		st.secret = fmt.Sprintf("soak-shop-secret-%016x", rnd.Uint64())
		cfg["shop"] = map[string]any{"secret": st.secret}
	}
	if p.rings {
		ringSale(cfg, st, ev)
	}
	body, _ := json.Marshal(cfg)
	ss.h.open(ev, saleSupply, saleLimit, saleActive)
	ss.h.setClaimTTL(ev, time.Duration(p.claimTTL)*time.Second)
	if p.door {
		ss.mu.Lock()
		blockedAt := ss.blockedAt
		ss.mu.Unlock()
		ss.h.openDoor(ev, blockedAt, eligibleAt)
	}
	ss.mu.Lock()
	ss.rates[ev] = []rateAt{{time.Now(), saleRate}}
	ss.frames = nil
	ss.mu.Unlock()
	ss.h.note("staff", "sale %s: %s", ev, p)
	for try := 0; ctx.Err() == nil; try++ {
		status, raw := ss.s.dp.AdminCall(ss.s.base(try), http.MethodPut, "/admin/events/"+ev, body)
		ss.h.note("staff", "create sale %s → %d", ev, status)
		if status == http.StatusCreated || status == http.StatusOK {
			break
		}
		if try > 60 {
			return fmt.Errorf("%d %s", status, raw)
		}
		wait.Sleep(ctx, time.Second)
	}
	if p.passUses > 0 {
		pass, err := ss.mintPass(ctx, ev, p.passUses)
		if err != nil {
			return err
		}
		st.pass = pass
	}
	ss.mu.Lock()
	if ss.live == nil {
		ss.live = map[string]*saleState{}
	}
	ss.live[ev] = st
	ss.ids = append(ss.ids, ev)
	ss.mu.Unlock()
	// Nodes re-read sales every 100 ms.
	for _, u := range ss.s.urls() {
		for try := 0; try < 100; try++ {
			resp, err := http.Get(u + "/events/" + ev)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			wait.Sleep(ctx, 100*time.Millisecond)
		}
	}
	return nil
}

// mintPass has staff mint a bypass pass of sale ev with uses uses.
func (ss *sales) mintPass(ctx context.Context, ev string, uses int) (string, error) {
	body, _ := json.Marshal(map[string]any{"ttl_seconds": 3600, "uses": uses, "note": "soak"})
	for try := 0; ctx.Err() == nil; try++ {
		status, raw := ss.s.dp.AdminCall(ss.s.base(try), http.MethodPost, "/admin/events/"+ev+"/passes", body)
		ss.h.note("staff", "mint a pass of %d uses for %s → %d", uses, ev, status)
		if status == http.StatusCreated {
			var v struct {
				Pass string `json:"pass"`
			}
			if err := json.Unmarshal(raw, &v); err != nil || v.Pass == "" {
				return "", fmt.Errorf("mint pass: %d %s", status, raw)
			}
			return v.Pass, nil
		}
		if try > 30 || (status != 0 && status < 500) {
			return "", fmt.Errorf("mint pass: %d %s", status, raw)
		}
		wait.Sleep(ctx, time.Second)
	}
	return "", ctx.Err()
}

// soldOut reports whether the sale shows sold out (or answers nothing).
func (ss *sales) soldOut(ev string) bool {
	var v struct {
		State string `json:"state"`
	}
	resp, err := adminClient.Get(ss.s.base(0) + "/events/" + ev)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return v.State == "sold_out" || v.State == "closed"
}

// sample checks the current sale once: units held ≤ supply in Redis, the
// admission frontier never past the people who joined, and its pace over
// the last 10 s.
func (ss *sales) sample(ctx context.Context) {
	ev := ss.current()
	if ev == "none" {
		return
	}
	tot, err := claim.NewStore(ss.s.redis()).Totals(ctx, claim.Sale{ID: ev, Buckets: ss.buckets(ev)})
	remaining := int64(-1)
	if err == nil {
		remaining = tot.Remaining
		ss.checks.Add(1)
		// A cancelled claim's unit returned to the stock holds nothing.
		if held, supply := tot.Granted-tot.Released-tot.Restocked, ss.h.supply(ev); held > supply || tot.Remaining < 0 {
			ss.h.violateNow(ev, "Redis: granted %d − released %d − cancelled and restocked %d = %d held, remaining %d, supply %d",
				tot.Granted, tot.Released, tot.Restocked, held, tot.Remaining, supply)
		}
	}
	ss.sampleFrontier(ctx, ev, remaining)
}

// noShows counts the positions in (lo, hi] whose holder had fetched no
// admission by at, or which no client was told: each may be a no-show the
// frontier moves past (the documented no-show rule).
func (h *history) noShows(ev string, lo, hi int64, at time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.sales[ev]
	n := 0
	for p := max(lo+1, 1); p <= hi; p++ {
		u, ok := b.posUser[fmt.Sprintf("/%d", p)]
		if t, got := b.tokenAt[u]; !ok || !got || t.After(at) {
			n++
		}
	}
	return n
}
