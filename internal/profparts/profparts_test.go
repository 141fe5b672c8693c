package profparts

import (
	"math"
	"testing"
)

// traces is go tool pprof -traces' output for three samples: a write(2)
// of the join script's Redis call, through the Redis client's metrics
// hook; the HTTP answer's write(2) under middleware; an allocation of a
// ticket's signature.
const traces = `File: anteroom
Type: cpu
-----------+-------------------------------------------------------
      30ms   syscall.write
             github.com/redis/go-redis/v9/internal/pool.(*Conn).WithWriter
             github.com/anteroom/anteroom/metrics.(*redisHook).ProcessHook.redisHook.ProcessHook.func1
             github.com/redis/go-redis/v9.(*Client).Process
             github.com/anteroom/anteroom/queue.runGroup
             github.com/anteroom/anteroom/web/shopper.(*API).join
             github.com/anteroom/anteroom/web/protect.(*Edge).EntryCap
             github.com/valyala/fasthttp.(*Server).serveConn
-----------+-------------------------------------------------------
      60ms   syscall.write
             bufio.(*Writer).Flush
             github.com/valyala/fasthttp.(*Server).serveConn
-----------+-------------------------------------------------------
      10ms   runtime.mallocgc
             github.com/anteroom/anteroom/tokens.(*Tickets).Sign
             github.com/anteroom/anteroom/web/protect.(*TicketCache).Sign
             github.com/anteroom/anteroom/web/shopper.(*API).join
             github.com/anteroom/anteroom/web/protect.(*Edge).EntryCap
             github.com/valyala/fasthttp.(*Server).serveConn
-----------+-------------------------------------------------------
`

// TestSharesInnermost: a join's samples go to the part of their
// innermost named frame, not to the middleware every stack passes.
func TestSharesInnermost(t *testing.T) {
	got := map[string]float64{}
	for _, p := range Shares(traces, Request, true) {
		got[p.Name] = p.Share
	}
	for name, want := range map[string]float64{
		"join script (package queue, its Redis calls)": 0.3,
		"HTTP (fasthttp, fiber, syscalls)":             0.6,
		"tickets and tokens (package tokens)":          0.1,
		"defences and identity (web/protect)":          0,
		"metrics and tracing":                          0,
	} {
		if math.Abs(got[name]-want) > 1e-9 {
			t.Errorf("%s: share %.3f, want %.3f", name, got[name], want)
		}
	}
	// The first rule matching any frame (the claims' breakdown) gives
	// the whole stack to the first part in the table it meets.
	first := map[string]float64{}
	for _, p := range Shares(traces, Claim, false) {
		first[p.Name] = p.Share
	}
	if first["signature"] != 0.1 || first["script (Redis client)"] != 0.3 || first["HTTP"] != 0.6 {
		t.Errorf("claims' breakdown %v", first)
	}
	kinds := map[string]float64{}
	for _, p := range Shares(traces, Kind, false) {
		kinds[p.Name] = p.Share
	}
	if kinds["join"] != 0.4 || kinds["HTTP outside a handler"] != 0.6 {
		t.Errorf("kinds %v", kinds)
	}
	if Shares("File: x\n", Request, true) != nil {
		t.Error("shares of no samples")
	}
}
