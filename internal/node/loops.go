package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/health"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/retention"
	"github.com/anteroom/anteroom/sale"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/protect"
)

// startLoops starts the node's background loops, which run until Close:
// the refusal counts' flush always, and the publisher's view of the epoch
// markers on an external NATS; unless cfg.Manual, the frontier
// refresh, the claim service's outbox work, the lifecycle recorder, the
// shop health prober, the webhook deliverer, the key reload, the
// limiter's heartbeat and the retention sweep of ended sales. Last, a loop
// that closes the limiter's Redis pool once Close has drained the HTTP
// side.
func (n *Node) startLoops(w *wiring) {
	cfg, lctx := &n.cfg, n.loops
	logErr := func(what string) func(error) {
		return func(err error) { cfg.Log.Warn(what, "err", err) }
	}
	snaps, svc, lc, limiter, refusals := w.snaps, w.svc, w.lc, w.limiter, w.refusals
	// Refusal counts reach Redis every second, and once more on Close,
	// in manual mode too (they drive nothing a test steps through).
	n.goLoop(func() { refusals.Run(lctx, time.Second, logErr("refusals")) })
	// On an external NATS (a replicated stream, or a server of its own)
	// the fence judges grants from the publisher's view of the epoch
	// markers rather than reading the stream after each PubAck; the
	// embedded server answers those reads with direct gets.
	if w.back.ns == nil {
		pub := w.pub
		n.goLoop(func() { pub.Follow(lctx, logErr("marker view")) })
	}
	if !cfg.Manual {
		n.goLoop(func() { _ = snaps.Run(lctx, cfg.Tick, logErr("refresh")) })
		listView := w.listView
		n.goLoop(func() { refreshLists(lctx, cfg.Tick, listView, logErr("lists refresh")) })
		n.goLoop(func() {
			_ = svc.Run(lctx, claim.RunConfig{Sales: salesOf(snaps), OnError: logErr("outbox")})
		})
		n.goLoop(func() { lc.Run(lctx, max(cfg.Tick, 250*time.Millisecond), snaps.All, logErr("lifecycle")) })
		prober := health.NewProber(w.shop, health.Config{AllowHTTP: cfg.WebhookAllowHTTP, Targets: cfg.targets(), OnError: logErr("shop health")})
		n.goLoop(func() { prober.Run(lctx, max(cfg.Tick, 250*time.Millisecond), snaps.All) })
		deliverer := lifecycle.NewDeliverer(w.js, w.back.rdb, w.events, lifecycle.DeliverConfig{AllowHTTP: cfg.WebhookAllowHTTP, Targets: cfg.targets(), OnError: logErr("webhook"), Now: w.clk.Now})
		n.goLoop(func() {
			if err := deliverer.Run(lctx); err != nil {
				cfg.Log.Warn("webhook deliverer stopped", "err", err)
			}
		})
		if w.push != nil {
			pusher := lifecycle.NewPushDeliverer(w.js, w.events, w.push, lifecycle.DeliverConfig{OnError: logErr("push")})
			n.goLoop(func() {
				if err := pusher.Run(lctx); err != nil {
					cfg.Log.Warn("push deliverer stopped", "err", err)
				}
			})
		}
		keys, reloadUsers := w.keys, w.reloadUsers
		watch := newKeyWatch(staff.NewAudit(w.back.rdb), keys)
		n.goLoop(func() { reloadKeys(lctx, cfg.KeyReload, keys, reloadUsers, watch, logErr("keys")) })
		n.goLoop(func() { limiter.NewHeartbeat(nodeID(), 0).Run(lctx, logErr("limit heartbeat")) })
		keeper, clk := retention.New(w.back.rdb, cfg.Retention), w.clk
		n.goLoop(func() { keeper.Run(lctx, cfg.RetentionEvery, endsOf(snaps), clk.Now, logErr("retention")) })
	}
	limitRDB := w.limitRDB
	n.goLoop(func() { <-lctx.Done(); _ = limitRDB.Close() }) // after the HTTP drain in Close
}

// serve begins serving HTTP on the node's listener; Close collects the
// result.
func (n *Node) serve() {
	go func() { n.serveErr <- n.app.Listener(n.ln) }()
	cfg := &n.cfg
	cfg.Log.Info("anteroom node serving", "addr", n.ln.Addr().String(), "identity", cfg.Identity, "metrics_addr", cfg.MetricsAddr)
	if cfg.Identity == protect.IdentityAnonymous && len(cfg.TrustedProxies) == 0 {
		cfg.Log.Info("per-IP join budgets count the peer address; behind a proxy or load balancer set ANTEROOM_TRUSTED_PROXIES, or every shopper shares its budget")
	}
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// endsOf lists every sale the node knows with its end, for the retention
// sweep.
func endsOf(s *sale.Snapshots) func() []retention.Sale {
	return func() []retention.Sale {
		all := s.All()
		out := make([]retention.Sale, 0, len(all))
		for _, v := range all {
			out = append(out, retention.Sale{ID: v.Config.ID, End: v.Config.EndsAt})
		}
		return out
	}
}

func salesOf(s *sale.Snapshots) func() []claim.Sale {
	return func() []claim.Sale {
		all := s.All()
		out := make([]claim.Sale, 0, len(all))
		for _, v := range all {
			out = append(out, claim.SaleOf(v.Config))
		}
		return out
	}
}

// reloadKeys picks up, every interval, key rotations made by other nodes
// or `anteroom keys` in the shared key directory, and (when users is not
// nil) the shop's rotated user keys. On error the previous keys stay.
// Each key set it serves is recorded once in the staff audit (see
// keyWatch).
func reloadKeys(ctx context.Context, every time.Duration, keys *tokens.KeySet, users func() error, watch *keyWatch, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	if err := watch.observe(ctx); err != nil {
		onErr(err)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := keys.Reload(); err != nil {
				onErr(err)
			} else if err := watch.observe(ctx); err != nil {
				onErr(err)
			}
			if users == nil {
				continue
			}
			if err := users(); err != nil {
				onErr(fmt.Errorf("user keys: %w", err))
			}
		}
	}
}

// nodeID names this process in the limiter's heartbeat set.
func nodeID() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// refreshLists refreshes the node's view of the door's lists every tick
// (one Redis round trip when no list changed) until ctx ends.
func refreshLists(ctx context.Context, every time.Duration, view *lists.Set, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, max(every, time.Second))
			if err := view.Refresh(rctx); err != nil && ctx.Err() == nil {
				onErr(err)
			}
			cancel()
		}
	}
}
