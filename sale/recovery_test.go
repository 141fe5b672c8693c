package sale_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestPresenceSurvivesFailedAdvance marks people present, makes the next
// advance fail in Redis, and checks that the marks are put back and written
// by the following advance: present people never turn into no-shows.
func TestPresenceSurvivesFailedAdvance(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	ctx := context.Background()
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "flaky", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now,
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 1000, NoShowGraceSeconds: 1,
	}, 5)
	g.tick(t, "all five admitted", func(s *admission.Sale) bool { return s.Frontier >= 5 })
	for p := int64(1); p <= 5; p++ {
		g.snaps.Present("flaky", p)
	}
	// The presence bitmap becomes a hash: the advance script fails in Redis.
	const present = "ar:{flaky}:present"
	if err := rdb.HSet(ctx, present, "x", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.snaps.StepOne(ctx, "flaky"); err == nil {
		t.Fatal("refresh succeeded with a broken presence bitmap")
	}
	if err := rdb.Del(ctx, present).Err(); err != nil {
		t.Fatal(err)
	}
	start := g.tick(t, "a refresh", func(*admission.Sale) bool { return true })
	s := g.tick(t, "two grace periods", func(s *admission.Sale) bool {
		return s.ServerTime.Sub(start.ServerTime) >= 2*time.Second
	})
	if s.NoShows != 0 {
		t.Fatalf("%d no-shows after a failed advance, want 0: the presence marks were lost", s.NoShows)
	}
	for p := int64(1); p <= 5; p++ {
		if bit, err := rdb.GetBit(ctx, present, p).Result(); err != nil || bit != 1 {
			t.Errorf("position %d: presence bit %d (%v), want 1", p, bit, err)
		}
	}
}

// TestRefreshSurvivesOneBrokenEvent refreshes two sales while one of them
// fails in Redis: the other is refreshed, the broken one keeps its previous
// view and its presence marks, Refresh reports the failure, and Run hands
// it to onErr and goes on until its context ends.
func TestRefreshSurvivesOneBrokenEvent(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	ctx := context.Background()
	now := time.Now()
	cfg := event.Config{PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now, EndsAt: now.Add(time.Hour),
		Supply: 10, AdmitRatePerSecond: 1000, NoShowGraceSeconds: 1}
	cfg.ID = "ok"
	g := newSaleRig(t, rdb, cfg, 3)
	cfg.ID = "broken"
	newSaleRig(t, rdb, cfg, 3) // same stores, second event
	if err := g.snaps.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	okBefore, _ := g.snaps.Get("ok")
	brokenBefore, _ := g.snaps.Get("broken")
	if okBefore == nil || brokenBefore == nil || len(g.snaps.All()) != 2 {
		t.Fatalf("views after the first refresh: ok %v, broken %v, all %d", okBefore, brokenBefore, len(g.snaps.All()))
	}
	g.snaps.Present("broken", 1)
	const present = "ar:{broken}:present"
	if err := rdb.HSet(ctx, present, "x", 1).Err(); err != nil {
		t.Fatal(err)
	}
	waitTicks := func() {
		// Let Redis TIME move on, so a refreshed view is recognisably newer.
		deadline := time.Now().Add(5 * time.Second)
		for {
			tm, err := rdb.Time(ctx).Result()
			if err != nil || tm.Sub(okBefore.ServerTime) > 5*time.Millisecond || time.Now().After(deadline) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitTicks()
	err := g.snaps.Refresh(ctx)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("refresh with a broken event: %v, want its error", err)
	}
	if ok, _ := g.snaps.Get("ok"); !ok.ServerTime.After(okBefore.ServerTime) {
		t.Errorf("the healthy event was not refreshed while another failed")
	}
	if b, _ := g.snaps.Get("broken"); b != brokenBefore {
		t.Errorf("the broken event's view changed; want its previous view kept")
	}

	// Run reports the failure to onErr every tick and stops with its context.
	runCtx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var errs []error
	done := make(chan error, 1)
	go func() {
		done <- g.snaps.Run(runCtx, 10*time.Millisecond, func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(errs)
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run reported no errors")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := rdb.Del(ctx, present).Err(); err != nil {
		t.Fatal(err)
	}
	g.id = "broken"
	g.tick(t, "the broken event to recover", func(s *admission.Sale) bool { return s != brokenBefore })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if bit, err := rdb.GetBit(ctx, present, 1).Result(); err != nil || bit != 1 {
		t.Errorf("presence of position 1 after recovery: %d (%v), want 1", bit, err)
	}
	// A failing configuration read keeps the marks too.
	g.snaps.Present("broken", 2)
	raw, err := rdb.Get(ctx, "ar:{broken}:cfg").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "ar:{broken}:cfg", "{not json", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.snaps.StepOne(ctx, "broken"); err == nil {
		t.Fatal("refresh with a corrupt configuration succeeded")
	}
	if err := rdb.Set(ctx, "ar:{broken}:cfg", raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	g.tick(t, "a refresh", func(*admission.Sale) bool { return true })
	if bit, err := rdb.GetBit(ctx, present, 2).Result(); err != nil || bit != 1 {
		t.Errorf("presence of position 2 after a failed configuration read: %d (%v), want 1", bit, err)
	}
}

// TestLateShowSurvivesFailedAdvance counts a late show back even when the
// advance that carries its presence mark fails in Redis halfway (here the
// history list has the wrong type): the script checks every key before it
// writes anything, so the retry on the next tick still sees the position
// unmarked and counts it back.
func TestLateShowSurvivesFailedAdvance(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	ctx := context.Background()
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "halfway", Supply: 2, Mode: event.Lottery, PrequeueOpensAt: now.Add(-time.Hour),
		StartsAt: now, EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 1000, NoShowGraceSeconds: 1,
	}, 10)
	g.tick(t, "the draw to admit two", func(s *admission.Sale) bool { return s.Frontier >= 2 })
	g.snaps.Present("halfway", 2)
	g.tick(t, "position 1 to be a no-show", func(s *admission.Sale) bool { return s.NoShows == 1 })
	const hist = "ar:{halfway}:hist"
	if err := rdb.Del(ctx, hist).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, hist, "not a list", 0).Err(); err != nil {
		t.Fatal(err)
	}
	g.snaps.Present("halfway", 1) // late, but it came
	if err := g.snaps.StepOne(ctx, "halfway"); err == nil {
		t.Fatal("refresh succeeded with a broken history list")
	}
	if err := rdb.Del(ctx, hist).Err(); err != nil {
		t.Fatal(err)
	}
	s := g.tick(t, "a refresh", func(*admission.Sale) bool { return true })
	if s.NoShows != 0 {
		t.Fatalf("%d no-shows after position 1 came late through a failed advance, want 0 (counted back)", s.NoShows)
	}
}
