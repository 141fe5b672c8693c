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
// known rate (30/s) with known no-shows that change mid-way: of the first
// 150 positions every odd one never comes, after that everyone does. The
// test polls for the 225 who come, each when their answer says (as the
// page does), from the node's view (sale.Snapshots, every tick), and the
// node keeps the answers as the status handler does (ShownETA). Checked:
//
//   - every ETA shown is at least what the frontier needs at its
//     configured rate and the node's measured no-show share, never
//     below a tenth of (ahead + 1) / rate, and the ETA does discount the
//     no-shows once they are measured, and stops once they stop;
//   - the report's ETA error (from the answers the ticks wrote to
//     Redis) equals the one this test computes from the answers it saw,
//     figure for figure.
func TestETAErrorOfAScriptedSale(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	ctx := context.Background()
	now := time.Now()
	const (
		rate   = 30.0
		joined = 300
		ev     = "eta"
	)
	cfg := event.Config{
		ID: ev, Supply: 1000, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour),
		AdmitRatePerSecond: rate, NoShowGraceSeconds: 2,
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
	frontier := admission.NewFrontier(rdb)
	snaps := sale.NewSnapshots(configs, frontier, claims)
	noShow := func(pos int64) bool { return pos <= 150 && pos%2 == 1 }

	seen := map[string][]answer{} // user → the answers this test saw
	next := map[string]time.Time{}
	done := map[string]bool{}
	half := func() float64 { return 0.5 }
	discounted, sawShare, shareAfter := false, 0.0, 1.0
	deadline := time.Now().Add(time.Minute)
	for len(done) < joined {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d of %d admitted or gone", len(done), joined)
		}
		if err := snaps.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := snaps.Get(ev)
		at := s.ServerTime // the node's clock, kept on Redis TIME
		for seq := int64(1); seq <= joined; seq++ {
			user := "u" + strconv.FormatInt(seq, 10)
			if done[user] || at.Before(next[user]) {
				continue
			}
			d := admission.Decide(s, seq, at, half)
			if noShow(d.Position) {
				done[user] = true // never polls again, never comes
				continue
			}
			if d.State != admission.Waiting && d.State != admission.Admitted {
				t.Fatalf("%s at position %d: %s", user, d.Position, d.State)
			}
			snaps.ShownETA(s, user, at, d)
			a := answer{at: at, eta: int64(d.ETA.Round(time.Second) / time.Second), admitted: d.State == admission.Admitted}
			seen[user] = append(seen[user], a)
			if a.admitted {
				snaps.PresentAfter(ev, d.Position, -1) // the token fetched
				done[user] = true
				continue
			}
			next[user] = at.Add(d.PollAfter)
			share := min(s.Pace.NoShowShare, admission.MaxNoShowShare)
			floor := time.Duration(float64(d.Ahead+1) * (1 - share) / rate * float64(time.Second))
			if d.ETA < floor-time.Millisecond || d.ETA < time.Duration(float64(d.Ahead+1)*0.1/rate*float64(time.Second)) {
				t.Fatalf("%s, %d ahead: ETA %v, shorter than the frontier can reach at %v/s with %.2f no-shows (%v)", user, d.Ahead, d.ETA, rate, share, floor)
			}
			if d.ETA < time.Duration(float64(d.Ahead+1)/rate*float64(time.Second))-time.Millisecond {
				discounted = true
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
	got := report.ETAErrorOf(answers, []string{report.DefaultLane}, []int64{joined})
	want := etaErrorOf(t, seen)
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

// etaErrorOf computes the ETA error of the default lane (stride 1) from
// the answers each user saw, by the report's definition, on its own: for
// each person who waited and was admitted, the first answer at or after
// join, a quarter, a half and three quarters of the wait, its error
// (eta − left) / left, then nearest-rank medians and 90th percentiles.
func etaErrorOf(t *testing.T, seen map[string][]answer) []report.ETAError {
	t.Helper()
	out := report.ETAError{Lane: report.DefaultLane, Stride: 1}
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
	if out.People < 100 {
		t.Fatalf("only %d people waited and were admitted", out.People)
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
	return []report.ETAError{out}
}
