package main

import (
	"context"
	"fmt"
	"path/filepath"
)

// measureExternal measures the smallest shape an operator runs, beside the
// embedded one of the other steps: one node on one external NATS server
// (`anteroom natsd`, its own process, JetStream on file storage, reached
// over TCP) and a redis-server, the node in header identity mode behind a
// trusted loopback proxy (the bench plays the gateway, as everywhere
// here). Granted claims/s with the node's CPU per claim by part, then
// status and join against the same fiber ceiling. The embedded node runs
// its NATS server in its own process and reaches it without TCP
// (nats.InProcessServer), so its CPU figures count the NATS server's work
// and no loopback hop; here the NATS server's CPU is its own line.
func measureExternal(ctx context.Context, s *stack, r *report) error {
	dir := filepath.Join(s.dir, "ext")
	x, err := startNATSServers(dir, s.bin, 1)
	if err != nil {
		return err
	}
	defer x.stop()
	evalsha, err := evalshaRate(ctx, s.redisAddr)
	if err != nil {
		return err
	}
	rp, raddr, err := x.redisSingle(filepath.Join(dir, "redis"))
	if err != nil {
		return err
	}
	r.command(fmt.Sprintf("external: one `anteroom natsd` (file store) + a redis-server + one node (ANTEROOM_NATS_URL, ANTEROOM_STREAM_REPLICAS=1, header identity); claims: %d Go workers, keep-alive HTTP, distinct pre-minted tokens, %s closed loop, CPU profile of the node over it", conns, r.d))
	n, err := x.node(s, filepath.Join(dir, "node"), "ext", s.bin, rp, "ANTEROOM_REDIS_URL=redis://"+raddr)
	if err != nil {
		return err
	}
	defer n.node.stop()
	const ev = "extclaims"
	if err := n.createEvent(ctx, ev, 10_000_000, 1000, map[string]any{"buckets": 8}); err != nil {
		return err
	}
	toks, err := mintTokens(n, ev, 120_000)
	if err != nil {
		return err
	}
	res, err := r3Claims(n, x, ev, r.d, toks, 0)
	if err != nil {
		return err
	}
	r.peaks["claim-ext"] = res.rate
	ratio := res.rate / evalsha
	r.add("external NATS + redis-server: granted claims/s end to end vs redis-benchmark EVALSHA of the claim script",
		fmt.Sprintf("%.0f/s", res.rate), fmt.Sprintf("%.0f/s", evalsha), ratio, "≥ 0.4", ratio >= 0.4)
	r.note("external NATS + redis-server: " + res.describe())
	r.prefix = "external NATS + redis-server: "
	defer func() { r.prefix = "" }()
	if err := measureStatus(ctx, n, r); err != nil {
		return err
	}
	return measureJoin(ctx, n, r)
}
