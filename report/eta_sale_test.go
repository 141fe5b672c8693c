package report_test

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/sale"
)

// TestETAErrorOfAScriptedSale runs a sale on a real redis-server at a
// known rate (30/s: 3/4 to the default lane, 1/4 to a members lane) with
// known no-shows that change mid-way: of the default lane's first 150
// positions every odd one never comes, after that everyone does; every
// member comes. The test polls for the 255 who come, each when their answer says (as the
// page does), from the node's view (sale.Snapshots, every tick), and the
// node keeps the answers as the status handler does (ShownETA). Checked:
//
//   - every ETA shown is at least what the frontier needs at its
//     configured rate and the node's measured no-show share, never
//     below a tenth of (ahead + 1) / rate, and the ETA does discount the
//     no-shows once they are measured, and stops once they stop;
//   - the report's ETA error per lane (from the answers the ticks wrote
//     to Redis) equals the one this test computes from the answers it
//     saw, figure for figure.
func TestETAErrorOfAScriptedSale(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	ctx := context.Background()
	now := time.Now()
	const (
		rate    = 30.0
		joined  = 300 // the default lane, at 3/4 of the rate
		members = 30  // the members lane, at 1/4
		ev      = "eta"
	)
	maxRate := []float64{rate * 3 / 4, rate / 4}
	cfg := event.Config{
		ID: ev, Supply: 1000, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour),
		AdmitRatePerSecond: rate, NoShowGraceSeconds: 2, Lanes: []event.Lane{{Name: "members", Share: 0.25}},
	}
	cfg.Defaults()
	configs := event.NewStore(rdb)
	if _, err := configs.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	claims := claim.NewStore(rdb)
	if err := claims.Lay(ctx, claim.SaleOf(cfg), cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, queue.KeysFor(ev).Seq, joined, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, queue.KeysForLane(ev, 1).Seq, members, 0).Err(); err != nil {
		t.Fatal(err)
	}
	frontier := admission.NewFrontier(rdb)
	snaps := sale.NewSnapshots(configs, frontier, claims)
	// No-shows in the default lane only; members all come.
	noShow := func(d admission.Decision) bool { return d.Lane == 0 && d.Position <= 150 && d.Position%2 == 1 }
	type person struct {
		user string
		seq  int64
	}
	var people []person
	for n := int64(1); n <= joined; n++ {
		people = append(people, person{"u" + strconv.FormatInt(n, 10), n})
	}
	for n := int64(1); n <= members; n++ {
		people = append(people, person{"m" + strconv.FormatInt(n, 10), queue.Laned(1, n)})
	}

	seen := []map[string][]answer{{}, {}} // lane → user → the answers this test saw
	next := map[string]time.Time{}
	done := map[string]bool{}
	half := func() float64 { return 0.5 }
	discounted, sawShare, shareAfter := false, 0.0, 1.0
	deadline := time.Now().Add(time.Minute)
	for len(done) < len(people) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d of %d admitted or gone", len(done), len(people))
		}
		if err := snaps.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := snaps.Get(ev)
		at := s.ServerTime // the node's clock, kept on Redis TIME
		for _, pp := range people {
			user := pp.user
			if done[user] || at.Before(next[user]) {
				continue
			}
			d := admission.Decide(s, pp.seq, at, half)
			if noShow(d) {
				done[user] = true // never polls again, never comes
				continue
			}
			if d.State != admission.Waiting && d.State != admission.Admitted {
				t.Fatalf("%s at position %d: %s", user, d.Position, d.State)
			}
			snaps.ShownETA(s, user, at, d)
			a := answer{at: at, eta: int64(d.ETA.Round(time.Second) / time.Second), admitted: d.State == admission.Admitted}
			seen[d.Lane][user] = append(seen[d.Lane][user], a)
			if a.admitted {
				snaps.PresentAfter(ev, queue.Laned(d.Lane, d.Position), -1) // the token fetched
				done[user] = true
				continue
			}
			next[user] = at.Add(d.PollAfter)
			pace, max := s.Pace, maxRate[d.Lane]
			if d.Lane > 0 {
				pace = s.Lanes[d.Lane-1].Pace
			}
			share := min(pace.NoShowShare, admission.MaxNoShowShare)
			floor := time.Duration(float64(d.Ahead+1) * (1 - share) / max * float64(time.Second))
			if d.ETA < floor-time.Millisecond || d.ETA < time.Duration(float64(d.Ahead+1)*0.1/max*float64(time.Second)) {
				t.Fatalf("%s, %d ahead: ETA %v, shorter than the frontier can reach at %v/s with %.2f no-shows (%v)", user, d.Ahead, d.ETA, max, share, floor)
			}
			if d.ETA < time.Duration(float64(d.Ahead+1)/max*float64(time.Second))-time.Millisecond {
				discounted = true
				if d.Lane > 0 {
					t.Fatalf("member %s: ETA %v discounted no-shows in a lane without any (share %.3f)", user, d.ETA, share)
				}
			}
		}
		sawShare = max(sawShare, s.Pace.NoShowShare)
		time.Sleep(20 * time.Millisecond) // a tick
	}
	for { // the last answers written, every no-show found
		if err := snaps.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := snaps.Get(ev)
		if s.Checked >= joined {
			if shareAfter = s.Pace.NoShowShare; s.NoShows != 75 {
				t.Fatalf("%d no-shows, want the 75 scripted", s.NoShows)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d positions checked for no-shows of %d", s.Checked, joined)
		}
		time.Sleep(20 * time.Millisecond) // a tick
	}
	if !discounted || sawShare <= 0 {
		t.Errorf("no ETA discounted the no-shows (largest share measured %.3f)", sawShare)
	}
	t.Logf("no-show share: at most %.3f while no-shows came, %.3f once everyone was checked", sawShare, shareAfter)

	answers, err := frontier.ETAAnswers(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	got := report.ETAErrorOf(answers, []string{report.DefaultLane, "members"}, []int64{joined, members})
	want := []report.ETAError{etaErrorOf(t, report.DefaultLane, seen[0], 150), etaErrorOf(t, "members", seen[1], 15)}
	if !closeErrors(got, want) {
		t.Fatalf("report's ETA error\n%+v\nwant (from the answers seen)\n%+v", got, want)
	}
	t.Logf("ETA error: %+v", got)
}

// answer is a status answer the test saw: when, the eta_seconds shown,
// and whether it handed the admission token.
type answer struct {
	at       time.Time
	eta      int64
	admitted bool
}

// etaErrorOf computes the ETA error of lane (stride 1) from the answers
// each of its users saw, by the report's definition, on its own: for
// each person who waited and was admitted, the first answer at or after
// join, a quarter, a half and three quarters of the wait, its error
// (eta − left) / left, then nearest-rank medians and 90th percentiles.
// At least least people must have waited.
func etaErrorOf(t *testing.T, lane string, seen map[string][]answer, least int64) report.ETAError {
	t.Helper()
	out := report.ETAError{Lane: lane, Stride: 1}
	errs := make([][]float64, 4)
	for _, as := range seen {
		k := slices.IndexFunc(as, func(a answer) bool { return a.admitted })
		if k <= 0 {
			continue // never admitted, or at the first answer
		}
		out.People++
		tA, waits := as[k].at, as[:k]
		wait := tA.Sub(waits[0].at)
		for q := range 4 {
			point := waits[0].at.Add(wait * time.Duration(q) / 4)
			for _, a := range waits {
				if !a.at.Before(point) {
					left := tA.Sub(a.at).Seconds()
					errs[q] = append(errs[q], (float64(a.eta)-left)/left)
					break
				}
			}
		}
	}
	if out.People < least {
		t.Fatalf("lane %s: only %d people waited and were admitted", lane, out.People)
	}
	for q, at := range []string{"join", "q25", "q50", "q75"} {
		es := errs[q]
		p := report.ETAPoint{At: at, Count: int64(len(es))}
		if n := len(es); n > 0 {
			abs := make([]float64, n)
			for i, e := range es {
				abs[i] = math.Abs(e)
			}
			slices.Sort(abs)
			slices.SortFunc(es, cmp.Compare[float64])
			med, p90 := (n+1)/2-1, (9*n+9)/10-1 // ⌈n/2⌉ and ⌈9n/10⌉, 1-based
			p.MedianAbs, p.P90Abs, p.Median = abs[med], abs[p90], es[med]
		}
		out.Points = append(out.Points, p)
	}
	return out
}
