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

// TestMillionScenario runs `loadgen -scenario million` small: 2,000 people
// join one event spread over two nodes sharing a real redis-server, keep
// polling at the poll_after_ms they are told, and the report accounts for
// joins, polls, admissions, Redis memory and the nodes' own histogram.
func TestMillionScenario(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cfg := nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret,
		SigningKeys: filepath.Join(t.TempDir(), "keys"), AdminToken: "million-test-" + randomHex(12)})
	a := nodetest.Start(t, cfg)
	b := nodetest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const people = 2000
	var out, errOut bytes.Buffer
	rep, err := runMillion(ctx, millionOpts{
		urls: []string{a.URL(), b.URL()}, metricsURLs: []string{a.MetricsURL(), b.MetricsURL()}, event: "million-test", admin: cfg.AdminToken, redisURL: r.URL(),
		people: people, rate: 500, hold: 3 * time.Second, joinShards: 1, joiners: 16, pollers: 32,
		userHeader: "X-User-ID", progressEvery: time.Second,
	}, &out, &errOut)
	if err != nil {
		t.Fatalf("million: %v; %s", err, errOut.String())
	}
	c := rep.crowd
	if c.Errors > 0 {
		t.Fatalf("%d errors, first: %v", c.Errors, c.FirstErrors)
	}
	if c.Joined != people {
		t.Errorf("joined %d, want %d", c.Joined, people)
	}
	if c.Polls == 0 || c.Status.Count == 0 {
		t.Errorf("no status polls answered: %+v", c.HoldStats)
	}
	if c.Admitted == 0 || c.Admitted+c.Waiting != people {
		t.Errorf("admitted %d and waiting %d of %d", c.Admitted, c.Waiting, people)
	}
	if rep.memAfter <= rep.memBefore {
		t.Errorf("redis used_memory %d → %d: the queue took no memory", rep.memBefore, rep.memAfter)
	}
	if rep.serverCount < float64(c.Polls) {
		t.Errorf("the nodes' histogram counts %.0f status requests, the crowd %d answers", rep.serverCount, c.Polls)
	}
	rep.print(&out)
	for _, want := range []string{"bytes per person", "status p99", "admitted/s", "generator"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
