package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/telemetry"
	"go.opentelemetry.io/otel"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := bindSettings(fs, getenv, true)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o, err := b.build(stderr)
	if err != nil {
		return err
	}
	cfg, delay, drain := o.Config, o.drainDelay, o.drainTimeout
	// Traces: the standard OTEL_* variables (docs/operate.md, "Traces").
	if cfg.Tracing, err = telemetry.FromEnv(getenv); err != nil {
		return err
	}
	if cfg.Tracing.Enabled() {
		// The SDK reports what it could not export here (the process's
		// one OpenTelemetry error handler).
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { cfg.Log.Warn("tracing", "err", err) }))
	}
	b.logInEffect(cfg.Log)
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
