package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
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
		urls: []string{a.URL(), b.URL()}, event: "flash-test", admin: cfg.AdminToken, redisURL: r.URL(), natsURL: ns.URL(),
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
