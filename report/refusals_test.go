package report_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/report"
)

// TestRefusalsCountRuleMatches: Match counts beside the refusals, in the
// same hash of the event, as RulePrefix+name; concurrent counts from two
// counters (two nodes) add up; a Match costs no Redis command until the
// flush; a flush that fails (Redis down) keeps both kinds of counts for
// the next one.
func TestRefusalsCountRuleMatches(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	ctx := context.Background()
	a, b := report.NewRefusals(rdb), report.NewRefusals(rdb)
	if err := rdb.Ping(ctx).Err(); err != nil { // warm the connection up
		t.Fatal(err)
	}
	before := r.CommandCount(t)
	var wg sync.WaitGroup
	for _, c := range []*report.Refusals{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Match("gala", "bots")
				c.Match("gala", "partner")
				c.Match("other", "bots")
			}
			c.Add("gala", "join.sink")
		}()
	}
	wg.Wait()
	if n := r.CommandCount(t) - before; n != 0 {
		t.Fatalf("counting ran %d Redis commands, want 0 before the flush", n)
	}
	for _, c := range []*report.Refusals{a, b} {
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.Read(ctx, "gala")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"rule.bots": 200, "rule.partner": 200, "join.sink": 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("gala's counts %v, want %v", got, want)
	}

	// Redis down: the flush fails and keeps the counts.
	a.Match("gala", "bots")
	a.Add("gala", "join.blocked")
	r.Stop(t)
	if err := a.Flush(ctx); err == nil {
		t.Fatal("flush with Redis down: no error")
	}
	r.Restart(t) // empty: nothing persists by default
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = a.Read(ctx, "gala")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"rule.bots": 1, "join.blocked": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after a failed flush and a good one: %v, want %v", got, want)
	}
}

// BenchmarkRefusalsMatch is the request path's cost of counting a rule's
// match: a map increment under a mutex, no allocation once the rule was
// counted since the last flush.
func BenchmarkRefusalsMatch(b *testing.B) {
	c := report.NewRefusals(nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Match("gala", "static")
		}
	})
}
