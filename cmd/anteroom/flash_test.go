package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/loopback"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/profparts"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestFlashScenario runs `loadgen -scenario flash` small: a few thousand
// people arrive open loop on the start-of-sale curve at two nodes sharing
// a real redis-server and NATS, poll at the server's pace and claim once
// admitted. Every person joins exactly once (the crowd and the nodes'
// count agree), the positions they are told are a bijection onto
// 1..people, the sale sells out with every unit granted once, the report
// and the order stream balance, and the per-second table accounts for
// every person offered.
func TestFlashScenario(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cfg := nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret,
		SigningKeys: filepath.Join(t.TempDir(), "keys"), AdminToken: "flash-test-" + randomHex(12)})
	a := nodetest.Start(t, cfg)
	b := nodetest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	people, units := 3000, int64(300)
	if testing.Short() {
		people, units = 1000, 100
	}
	var out, errOut bytes.Buffer
	rep, err := runFlash(ctx, flashOpts{
		urls: []string{a.URL(), b.URL()}, metricsURLs: []string{a.MetricsURL(), b.MetricsURL()}, event: "flash-test", admin: cfg.AdminToken, redisURL: r.URL(), natsURL: ns.URL(),
		people: people, units: units, rate: 500, joinShards: 1, seed: 7,
		curve:   arrivalCurve{Share: 0.8, Refresh: time.Second, Tail: time.Second, Stretch: 1},
		joiners: 64, pollers: 64, userHeader: "X-User-ID", hold: time.Minute,
	}, &out, &errOut)
	if err != nil {
		t.Fatalf("flash: %v; %s", err, errOut.String())
	}
	rep.print(&out, true)
	c := rep.crowd
	if c.Errors > 0 {
		t.Errorf("%d errors, first: %v", c.Errors, c.FirstErrors)
	}
	if c.Joined != int64(people) || rep.serverJoined != float64(people) {
		t.Errorf("joined %d (the nodes count %.0f), want %d each", c.Joined, rep.serverJoined, people)
	}
	if c.Offered != int64(people) {
		t.Errorf("offered %d joins, want %d: each person joins once", c.Offered, people)
	}
	if !rep.positions.bijection(people) {
		t.Errorf("positions %+v: not a bijection onto 1..%d", rep.positions, people)
	}
	if !rep.soldOut || c.Claimed != units {
		t.Errorf("sold out %v with %d claims granted, want sold out with %d", rep.soldOut, c.Claimed, units)
	}
	if rep.balanceErr != nil || !rep.balance.balanced() || rep.balance.redisGranted != units || rep.balance.remaining != 0 {
		t.Errorf("the report and the stream: %v %+v", rep.balanceErr, rep.balance)
	}
	if rep.offeredSum != int64(people) || rep.secondsOK != int64(people) {
		t.Errorf("the per-second table counts %d offered and %d joins answered 2xx, want %d each", rep.offeredSum, rep.secondsOK, people)
	}
	var sent int64
	for _, s := range c.Seconds {
		sent += s.Sent
	}
	if sent != c.Join.Count {
		t.Errorf("the per-second table counts %d join requests sent, the crowd %d", sent, c.Join.Count)
	}
	if len(rep.samples) == 0 {
		t.Errorf("no per-second samples of the nodes")
	}
	if !rep.ok() {
		t.Errorf("the run does not check out")
	}
	for _, want := range []string{"flash: PASS", "BALANCED", "bytes per person", "| second | offered |", "| total,"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", out.String())
	}
}

// TestFlashProfile: -profile's profile of a node serving joins, taken
// over its span and broken down by kind of request and by part, the
// joins' handlers among the kinds; and -profile refused without -spawn.
func TestFlashProfile(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), PprofAddr: addr}))
	nodetest.CreateSale(t, n, "prof", map[string]any{"name": "Profiled", "supply": 10, "admit_rate_per_second": 1,
		"prequeue_opens_at": time.Now().Add(-time.Minute), "starts_at": time.Now().Add(time.Hour), "ends_at": time.Now().Add(2 * time.Hour)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := flashProfile{path: filepath.Join(t.TempDir(), "node.pprof"), bin: bin, from: 100 * time.Millisecond, span: 2 * time.Second}
	done := make(chan error, 1)
	go func() { done <- p.take(ctx, addr) }()
	deadline := time.Now().Add(2500 * time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/prof/join", map[string]string{"X-User-ID": fmt.Sprint("p", i)}, nil); a.Status != http.StatusOK {
			t.Fatalf("join: %d %s", a.Status, a.Raw)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.analyse()
	if p.err != nil {
		t.Fatal(p.err)
	}
	t.Logf("by request: %s\nby part: %s", profparts.Format(p.kinds, 0), profparts.Format(p.parts, 0))
	kinds := map[string]float64{}
	for _, k := range p.kinds {
		kinds[k.Name] = k.Share
	}
	if kinds["join"] <= 0 || kinds["status"] != 0 {
		t.Errorf("by kind of request %v: want joins' handlers and no status", kinds)
	}
	var sum float64
	for _, s := range p.parts {
		sum += s.Share
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("the parts sum to %.3f: %v", sum, p.parts)
	}
	var out, errOut bytes.Buffer
	if _, err := runFlash(ctx, flashOpts{urls: []string{n.URL()}, profile: p.path}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "-spawn") {
		t.Errorf("-profile without -spawn: %v", err)
	}
}

// TestFlashArrivalCurve: the instants are sorted; the share on the page
// arrives within 1.2 refreshes (room.js's refresh with its ±20 % jitter),
// nobody after 3 tails, and a stretch multiplies the same draw.
func TestFlashArrivalCurve(t *testing.T) {
	c := arrivalCurve{Share: 0.8, Refresh: 4 * time.Second, Tail: 4 * time.Second, Stretch: 1}
	const n = 100000
	a := c.instants(n, 3)
	if !slices.IsSorted(a) {
		t.Fatal("arrival instants are not sorted")
	}
	early := 0
	for _, x := range a {
		if x <= 4800*time.Millisecond {
			early++
		}
	}
	if early < n*8/10 {
		t.Errorf("%d of %d arrive within 4.8 s, want at least the 80%% on the page", early, n)
	}
	if last := a[n-1]; last > 12*time.Second {
		t.Errorf("the last arrives at %s, after 3 tails (12 s)", last)
	}
	c.Stretch = 10
	b := c.instants(n, 3)
	for i := range a {
		if d := b[i] - 10*a[i]; d < -10 || d > 10 {
			t.Fatalf("instant %d: %s stretched ×10 is %s", i, a[i], b[i])
		}
	}
	r := flashReport{opts: flashOpts{curve: c}, arrivals: b}
	if p := r.realPeak(); p < n*8/10/5 || p > n {
		t.Errorf("the busiest unstretched second offers %d of %d: want at least a fifth of the 80%% arriving over ≤ 4.8 s", p, n)
	}
}
