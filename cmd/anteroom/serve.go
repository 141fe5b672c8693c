package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/anteroom/anteroom/internal/node"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	build := nodeFlags(fs, getenv, stderr)
	delayFlag := fs.String("drain-delay", envOr(getenv, "DRAIN_DELAY", "5s"), "lame-duck time after SIGTERM: /readyz answers 503 while the node keeps serving, so load balancers stop sending traffic first (ANTEROOM_DRAIN_DELAY)")
	drainFlag := fs.String("drain-timeout", envOr(getenv, "DRAIN_TIMEOUT", "20s"), "how long shutdown then waits for in-flight requests and the outbox flush (ANTEROOM_DRAIN_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	delay, err := time.ParseDuration(*delayFlag)
	if err != nil || delay < 0 {
		return fmt.Errorf("drain delay %q: want a duration such as 5s (0 for none)", *delayFlag)
	}
	drain, err := time.ParseDuration(*drainFlag)
	if err != nil || drain <= 0 {
		return fmt.Errorf("drain timeout %q: want a positive duration such as 20s", *drainFlag)
	}
	cfg, err := build()
	if err != nil {
		return err
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	// Lame duck: not ready, still serving, until the load balancers have
	// seen /readyz fail; then stop accepting, finish in-flight claims
	// (their order events are acknowledged before the 201), flush the
	// outbox bookkeeping and close.
	n.Drain()
	cfg.Log.Info("shutting down: lame duck", "drain_delay", delay.String())
	if delay > 0 {
		t := time.NewTimer(delay)
		<-t.C
	}
	cfg.Log.Info("shutting down: finishing in-flight requests", "drain_timeout", drain.String())
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := n.Close(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	cfg.Log.Info("shut down cleanly")
	return nil
}
