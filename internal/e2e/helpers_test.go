package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// startNode starts a node on a free loopback port with its own
// redis-server and NATS JetStream, and stops it on cleanup. With no
// configure the node runs on the default identity (anonymous visitor
// cookies); nodetest.HeaderMode puts it behind a loopback gateway.
func startNode(t *testing.T, configure ...func(node.Config) node.Config) *node.Node {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	cfg := node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}
	for _, f := range configure {
		cfg = f(cfg)
	}
	return nodetest.Start(t, cfg)
}

// sale is an event configuration for the admin API, relative to the
// moment it is encoded (nodetest.CreateSale encodes it when it sends it).
type sale struct {
	supply         int
	mode           string
	opensIn        time.Duration // prequeue_opens_at - now
	startsIn       time.Duration // starts_at - now
	window         int           // random_window_seconds
	rate           float64
	name           string
	pow            int // proof-of-work bits on join; 0: the sale's default (on for a lottery of anonymous visitors)
	endsAfterStart time.Duration
	lanes          []map[string]any // the event's lanes, as the admin API takes them
}

// MarshalJSON encodes the sale as the admin API takes it, its times
// counted from now.
func (s sale) MarshalJSON() ([]byte, error) {
	if s.mode == "" {
		s.mode = "fcfs"
	}
	if s.name == "" {
		s.name = "Launch sneaker drop"
	}
	if s.endsAfterStart == 0 {
		s.endsAfterStart = time.Hour
	}
	now := time.Now().UTC().Truncate(time.Second)
	m := map[string]any{
		"name": s.name, "supply": s.supply, "mode": s.mode,
		"prequeue_opens_at": now.Add(s.opensIn), "starts_at": now.Add(s.startsIn), "ends_at": now.Add(s.startsIn + s.endsAfterStart),
		"random_window_seconds": s.window, "admit_rate_per_second": s.rate,
	}
	if s.pow > 0 {
		m["limits"] = map[string]any{"pow": map[string]any{"enabled": true, "bits": s.pow}}
	}
	if s.lanes != nil {
		m["lanes"] = s.lanes
	}
	return json.Marshal(m)
}

// probes numbers the probe sales of setupPace within a node.
var probes atomic.Int64

// setupPace measures what one shopper's setup costs on this machine now:
// a fresh tab (with headers) opens the waiting room of probe, a sale whose
// queue is open and which starts in an hour (give it the test's own
// sale's mode and friction: a lottery's proof of work is most of the
// cost), and joins it. A test whose shoppers must open the room and join
// before a moment of its sale (the queue's opening, the start, a window's
// close) schedules that moment nodetest.Lead(shoppers × setupPace, its own
// figure) ahead, never a fixed few seconds that a loaded machine misses.
func setupPace(t *testing.T, n *node.Node, browser context.Context, probe any, headers map[string]any) time.Duration {
	t.Helper()
	id := fmt.Sprint("probe-", probes.Add(1))
	nodetest.CreateSale(t, n, id, probe)
	d := nodetest.Pace(func() {
		p := newTab(t, browser, id, phoneW, phoneH, headers)
		p.do(chromedp.Navigate(n.URL() + "/e/" + id))
		p.waitJS("the probe's join button", joinEnabled, 0)
		p.do(chromedp.Click(chromedp.ID("join")))
		p.waitJS("the probe's join", `typeof me === "object" && me !== null`, 0)
	})
	t.Logf("one shopper's setup (open a tab, load the room, join) took %s on this machine now", d.Round(time.Millisecond))
	return d
}
